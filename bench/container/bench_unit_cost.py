"""What one synthesis unit costs: G2P and model time against the unit's length, real Kokoro.

The container plans a message's units from a cost model (``reference_container.unit_cost``: a fixed
cost per model call plus a cost per character). This prints, for units of 5 to 150 characters cut
from ordinary sentences, the G2P time, the model time, the audio made, its leading and trailing
near-silence (the model's padding, which it synthesizes too: most of a short unit's cost), the
median of ``--rounds`` runs (the fastest with ``--min``, on a busy machine), then the least-squares
fit of the time against the length (what the container measures at start-up) and its error.

    uv run python bench/container/bench_unit_cost.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

TEXTS = (
    "Sure,",
    "Thanks for calling.",
    "Sure, I can help with that.",
    "I checked your account, and I can see",
    "Your order shipped yesterday and should arrive on Thursday.",
    "The first one has already shipped and should arrive tomorrow before noon.",
    "I checked your account, and I can see two orders placed this week, one on Monday and one on Wednesday.",
    "Our new office opens on Monday, and every team will move in over the following two weeks, starting "
    "with the people who sit closest to the old kitchen.",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--voices-dir", default=os.environ.get("KOKORO_VOICES_DIR", "../shared/kokoro/voices"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min", action="store_true", help="take each text's fastest round (a busy machine)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not Path(args.voices_dir).is_dir():
        parser.error(f"--voices-dir {args.voices_dir}: no such folder")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bidi_tts.audio import first_audible_sample, float_to_pcm16
    from reference_container.settings import parse_settings
    from reference_container.synthesizers.factory import build_synthesizer

    settings = parse_settings(["--backend", "onnx"], env={"KOKORO_VOICES_DIR": args.voices_dir})
    synth = build_synthesizer(settings)
    synth.load()
    g2p = synth._g2p  # type: ignore[attr-defined]
    rate = synth.sample_rate
    list(synth.synthesize("Hello there, this is a warm-up.", args.voice, 1.0))
    print(f"{'chars':>5} {'g2p ms':>7} {'total ms':>8} {'audio s':>7} {'lead ms':>7} {'tail ms':>7}  text")
    xs, ys, audios, pads = [], [], [], []
    for text in TEXTS:
        g2p_ms, total_ms = [], []
        audio = np.zeros(0, dtype=np.float32)
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            list(g2p.phonemes(text))
            g2p_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            audio = np.concatenate(list(synth.synthesize(text, args.voice, 1.0)))
            total_ms.append((time.perf_counter() - t0) * 1000)
        if "," in text:  # the model's own pause at the comma: what a cut there may keep
            loud = np.flatnonzero(np.abs(audio) > 0.01)
            gaps = np.diff(loud) if loud.size > 1 else np.zeros(1)
            print(f"      longest pause inside {text[:30]!r}: {gaps.max() / rate * 1000:.0f} ms")
        lead = (first_audible_sample(float_to_pcm16(audio)) or 0) / rate * 1000
        loud = np.flatnonzero(np.abs(audio) > 0.01)
        tail = (len(audio) - 1 - int(loud[-1])) / rate * 1000 if loud.size else 0.0
        total = min(total_ms) if args.min else statistics.median(total_ms)
        xs.append(len(text))
        ys.append(total / 1000)
        audios.append(len(audio) / rate)
        pads.append((lead + tail) / 1000)
        print(f"{len(text):>5} {statistics.median(g2p_ms):>7.0f} {total:>8.0f} {len(audio) / rate:>7.2f} "
              f"{lead:>7.0f} {tail:>7.0f}  {text[:50]}")
    slope, intercept = np.polyfit(xs, ys, 1)
    pred = intercept + slope * np.asarray(xs)
    err = np.abs(pred - ys) / np.asarray(ys)
    print(f"fit: {intercept * 1000:.0f} ms per call + {slope * 1000:.2f} ms per character "
          f"(relative error median {np.median(err):.0%}, max {np.max(err):.0%})")
    speech = np.asarray(audios) - np.asarray(pads)
    a_slope, a_icpt = np.polyfit(xs, speech, 1)
    print(f"speech: {a_icpt:.3f} s + {a_slope * 1000:.1f} ms per character; pads (lead + tail) median "
          f"{np.median(pads):.3f} s; real-time factor {sum(ys) / sum(audios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
