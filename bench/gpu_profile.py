"""Turn the GPU bundle's results into a timed-backend profile (reference_container/profiles/h200-measured.json).

    python bench/gpu_profile.py RESULTS/gpu_results.json    # writes reference_container/profiles/h200-measured.json
    python bench/gpu_profile.py RESULTS/gpu_results.json --out my.json --name my-gpu

From the measurement (``bench/gpu_bundle.py``'s ``run.sh`` on a CUDA device, not ``--quick``):

- ``call_ms_by_tokens``: eager fp32 batch-1 call time (median) of each probe sentence, by its tokens,
  and the least-squares line through them as ``call_fixed_ms`` + ``call_per_token_ms``;
- ``audio_s_by_tokens``: the audio those calls made (raw model output, leading silence included), and
  its line as ``audio_s_per_call`` + ``audio_s_per_token``;
- ``call_cv``: the calls' scatter around their median (mean coefficient of variation over probes);
- ``throughput_by_concurrency``: audio seconds per second of the plain path at k sessions over that at
  one (the sessions there call the model back to back: no G2P in the loop);
- ``batch_shared_fraction``: the fit of batched passes of k equal units, clamped to [0, 1].

The G2P runs on the host, never on the GPU machine (no misaki there): ``tokens_per_char`` and the
``g2p_*`` fields come from ``--g2p-from`` (default ``h200-eager``) and the source says so. A quick or
CPU run is refused (exit 4) unless ``--allow-cpu``: such a profile is no measurement of a GPU.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bidi_tts.exit_codes import Parser  # noqa: E402
from reference_container.synthesizers.timed_profile import ProfileError, load_profile, parse_profile  # noqa: E402

DEFAULT_OUT = ROOT / "reference_container" / "profiles" / "h200-measured.json"


class ResultsError(ValueError):
    """The results cannot make a profile; one line for people."""


def _line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope); a single point is a line through the origin."""
    if len(points) == 1:
        return 0.0, points[0][1] / points[0][0]
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    slope, intercept = statistics.linear_regression(xs, ys)
    return intercept, slope


def profile_from(results: dict[str, Any], source: str, *, name: str, g2p_from: str,
                 allow_cpu: bool = False) -> dict[str, Any]:
    if not allow_cpu and (results.get("device") != "cuda" or results.get("quick")):
        raise ResultsError(f"{source} is a {'quick ' if results.get('quick') else ''}{results.get('device')} run, "
                           "not a GPU measurement (--allow-cpu to convert it anyway)")
    try:
        rows = results["ttfa_batch1"]["eager_fp32"]
        plain = results["concurrency"]["plain"]
    except (KeyError, TypeError) as exc:
        raise ResultsError(f"{source} lacks the batch-1 or concurrency figures ({exc})") from exc
    by_tokens: dict[int, dict[str, Any]] = {int(r["tokens"]): r for r in rows}
    calls = [(float(t), float(r["median_ms"])) for t, r in sorted(by_tokens.items())]
    audio = [(float(t), float(r["audio_s"])) for t, r in sorted(by_tokens.items())]
    call_fixed, call_per_token = _line(calls)
    audio_fixed, audio_per_token = _line(audio)
    cvs = [statistics.pstdev(r["ms"]) / statistics.fmean(r["ms"]) for r in rows if len(r["ms"]) > 1]
    one = next((r["audio_per_wall_s"] for r in plain if r["sessions"] == 1), None)
    if not one:
        raise ResultsError(f"{source} has no plain step at one session")
    shared = (results.get("batch_passes") or {}).get("shared_fraction")
    base = load_profile(g2p_from)
    gpu = results.get("gpu") or results.get("device")
    share_note = f"fit {shared:.3f}" if shared is not None else "absent: 0"
    profile = {
        "name": name,
        "description": f"Kokoro-82M on torch, fp32, eager, real weights (rebuilt from the int8 ONNX export), "
                       f"{gpu}: measured by bench/gpu_bundle.py, converted by bench/gpu_profile.py.",
        "source": f"{source}, run {results.get('started_at')} on {gpu} (torch {results.get('torch')}, bundle "
                  f"{results.get('bundle', {}).get('commit')}). Calls: eager fp32 batch-1 medians of "
                  f"{len(calls)} probe sentences ({int(calls[0][0])}-{int(calls[-1][0])} tokens). Throughput: "
                  f"the plain path's audio-s/s at k sessions over k=1 ({one:.1f} audio-s/s). Batch share: "
                  f"batched passes of k equal units ({share_note}). "
                  f"G2P fields from {base.name} (the GPU machine has no G2P).",
        "tokens_per_char": base.tokens_per_char,
        "g2p_fixed_ms": base.g2p_fixed_ms,
        "g2p_per_char_ms": base.g2p_per_char_ms,
        "call_fixed_ms": round(max(call_fixed, 0.0), 3),
        "call_per_token_ms": round(call_per_token, 4),
        "call_ms_by_tokens": [[t, round(ms, 3)] for t, ms in calls],
        "audio_s_per_token": round(audio_per_token, 5),
        "audio_s_per_call": round(max(audio_fixed, 0.0), 4),
        "audio_s_by_tokens": [[t, round(s, 4)] for t, s in audio],
        "max_tokens_per_call": 510,
        "throughput_by_concurrency": {str(r["sessions"]): round(r["audio_per_wall_s"] / one, 4) for r in plain},
        "batch_shared_fraction": round(min(max(shared, 0.0), 1.0), 4) if shared is not None else 0.0,
        "call_cv": round(statistics.fmean(cvs), 4) if cvs else 0.0,
        "g2p_on_device": False,
    }
    parse_profile(profile, name)  # the timed backend must accept it
    return profile


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", type=Path, help="gpu_results.json written by the bundle's run.sh")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--name", default="h200-measured")
    p.add_argument("--g2p-from", default="h200-eager", help="profile whose G2P fields are used")
    p.add_argument("--allow-cpu", action="store_true", help="convert a CPU or --quick run (never ship it)")
    args = p.parse_args(argv)
    try:
        results = json.loads(args.results.read_text(encoding="utf-8"))
        profile = profile_from(results, f"{args.results.name}", name=args.name, g2p_from=args.g2p_from,
                               allow_cpu=args.allow_cpu)
    except OSError as exc:
        print(f"gpu_profile: cannot read {args.results}: {exc.strerror}", file=sys.stderr)
        return 4
    except (ValueError, ResultsError, ProfileError) as exc:
        print(f"gpu_profile: {exc}", file=sys.stderr)
        return 4
    try:
        args.out.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        print(f"gpu_profile: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return 4
    print(f"gpu_profile: wrote {args.out} ({profile['call_fixed_ms']} ms + {profile['call_per_token_ms']} ms/token, "
          f"batch share {profile['batch_shared_fraction']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
