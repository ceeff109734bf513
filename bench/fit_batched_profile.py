"""Fit the ``h200-batched`` timing profile to the H200's whole-model batch measurements.

    uv run python bench/fit_batched_profile.py ../shared/measurements/h200-2026-12-04 [--mode tf32]

Inputs: ``ceiling_results.json`` (B identical units of 12, 58 and 121 tokens, every tensor batched:
no padding) and ``mixed_lengths_results.json`` (B corpus units padded to the longest, timing only),
both from 2026-12-04. Model: a pass of B units whose longest makes A seconds of audio costs
``fixed + c * B * A`` (the padded audio, which is what the decoder computes), fitted by least
squares on relative error over every row with B > 1 of the chosen precision. The audio and G2P
fields come from ``h200-measured`` (the real weights' batch-1 calls on the same GPU). Prints the fit
and its residuals; writes ``reference_container/profiles/h200-batched.json`` (``--out`` for another).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bidi_tts.exit_codes import Parser  # noqa: E402


def rows(folder: Path, mode: str) -> list[tuple[int, float, float, str]]:
    """(batch size, padded audio seconds, pass ms, what) for every batched row of `mode`."""
    ceiling = json.loads((folder / "ceiling_results.json").read_text(encoding="utf-8"))
    mixed = json.loads((folder / "mixed_lengths_results.json").read_text(encoding="utf-8"))
    out = [(r["B"], r["B"] * r["audio_s_each"], r["median_ms"], f"identical {r['tokens']} tok")
           for r in ceiling["batched"] if r["mode"] == mode and r["B"] > 1]
    out += [(r["B"], r["padded_audio_s"], r["pass_ms"], f"{r['kind']} {r['tokens_min']}-{r['tokens_max']} tok")
            for r in mixed["rows"] if r["mode"] == mode and r["B"] > 1]
    return out


def fit(points: list[tuple[int, float, float, str]]) -> tuple[float, float]:
    """(fixed ms, ms per padded audio-second), least squares on relative error."""
    x = np.array([[1.0, padded] for _, padded, _, _ in points])
    y = np.array([ms for _, _, ms, _ in points])
    (fixed, per_audio), *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
    return float(fixed), float(per_audio)


def profile(folder: Path, mode: str) -> tuple[dict[str, Any], list[str]]:
    from reference_container.synthesizers.timed_profile import load_profile

    points = rows(folder, mode)
    if len(points) < 3:
        raise SystemExit(f"fit_batched_profile: fewer than 3 batched rows of mode {mode} in {folder}")
    fixed, per_audio = fit(points)
    report = [f"{what:>24s} B={b:3d}: {ms:7.1f} ms, model {fixed + per_audio * padded:7.1f} "
              f"({(fixed + per_audio * padded) / ms - 1:+.0%})" for b, padded, ms, what in points]
    base = load_profile("h200-measured").as_dict()
    errors = [abs((fixed + per_audio * padded) / ms - 1) for _, padded, ms, _ in points]
    base.update({
        "name": "h200-batched",
        "description": (f"Kokoro-82M on torch, the whole model batched across sessions ({mode}), one NVIDIA H200: "
                        "the container's serving loop (--batch-window-ms) as a GPU would run it. Simulation input: "
                        "fitted to measured passes, not a run of this container."),
        "source": (f"bench/fit_batched_profile.py on ../shared/measurements/h200-2026-12-04 (ceiling_results.json, "
                   f"mixed_lengths_results.json; KModel's own modules with every tensor batched, {len(points)} "
                   f"{mode} passes of B = 8-256 units, identical and padded mixes): a pass costs "
                   f"{fixed:.1f} ms + {per_audio:.3f} ms per padded audio-second (B times the longest unit's "
                   f"audio), residuals {min(errors):.0%}-{max(errors):.0%}, so padding costs what it cost there. "
                   "Audio per call, batch-1 calls and G2P: h200-measured (real weights, same GPU). Not yet "
                   "validated against the bundle's serving step (bench/gpu_bundle_serving.py), which has not run on "
                   "a GPU."),
        "batch_pass_fixed_ms": round(fixed, 3),
        "batch_pass_ms_per_padded_audio_s": round(per_audio, 4),
    })
    return base, report


# Memory bandwidth, the ratio the g5 estimate scales by: the A10G's 600 GB/s (the same as the A10's,
# as Baseten's comparison of the two cards gives it) against the H200's 4.8 TB/s (docs/gpu.md). That
# the batched pass is bound by memory traffic is an assumption: no profile of it on a GPU exists yet.
A10G_BANDWIDTH_GBPS = 600.0
H200_BANDWIDTH_GBPS = 4800.0
SAMPLE_CHARS_PER_REQUEST = 25.2  # the AWS sample's g5 ladder (profiles/g5-xlarge.json's source)
SAMPLE_REQUESTS_PER_S = 17.9


def g5_estimate(data: dict[str, Any], batches: tuple[int, ...] = (1, 8, 32, 64, 128)) -> list[str]:
    """ESTIMATE, not a measurement: the batched container on ml.g5.xlarge, the H200 fit's per-audio
    cost scaled by the bandwidth ratio, its fixed cost per pass kept (host-side launches)."""
    from reference_container.synthesizers.timed_profile import parse_profile

    profile = parse_profile(data, "h200-batched")
    ratio = H200_BANDWIDTH_GBPS / A10G_BANDWIDTH_GBPS
    tokens = profile.tokens("x" * round(SAMPLE_CHARS_PER_REQUEST)) + 2
    audio = profile.audio_s(tokens, 1.0)
    lines = [f"g5 ESTIMATE (A10G {A10G_BANDWIDTH_GBPS:.0f} GB/s against H200 {H200_BANDWIDTH_GBPS:.0f} GB/s: "
             f"{ratio:.1f}x the per-audio cost; {SAMPLE_CHARS_PER_REQUEST} chars = {tokens} tokens = {audio:.2f} s "
             f"of audio a request):"]
    for b in batches:
        pass_ms = profile.batch_pass_fixed_ms + ratio * profile.batch_pass_ms_per_padded_audio_s * b * audio
        lines.append(f"  B={b:3d}: pass {pass_ms:6.0f} ms, {b / pass_ms * 1000:5.1f} requests/s "
                     f"({b / pass_ms * 1000 / SAMPLE_REQUESTS_PER_S:.1f}x the sample's measured "
                     f"{SAMPLE_REQUESTS_PER_S})")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path, help="the measurement folder (ceiling and mixed-length results)")
    p.add_argument("--mode", choices=["fp32", "tf32", "bf16"], default="tf32",
                   help="precision to fit (default tf32: the container's CUDA default, docs/gpu.md)")
    p.add_argument("--out", type=Path, default=ROOT / "reference_container" / "profiles" / "h200-batched.json")
    args = p.parse_args(argv)
    for name in ("ceiling_results.json", "mixed_lengths_results.json"):
        if not (args.folder / name).is_file():
            print(f"fit_batched_profile: {args.folder / name} not found", file=sys.stderr)
            return 4
    data, report = profile(args.folder, args.mode)
    print("\n".join(report + g5_estimate(data)))
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"fit_batched_profile: wrote {args.out} ({data['batch_pass_fixed_ms']} ms + "
          f"{data['batch_pass_ms_per_padded_audio_s']} ms per padded audio-second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
