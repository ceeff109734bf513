"""Judge the GPU bundle's precision renders against fp32: duration, spectral distance, words heard.

    uv run python bench/judge_precision.py RESULTS_DIR [--json OUT]

RESULTS_DIR holds what the bundle's ``precision_audio`` step wrote: ``gpu_results.json`` (which
sentence each render is) and ``precision_audio.npz`` (``MODE__INDEX`` arrays, float32 at 24 kHz, the
same seeds for every mode). For each mode other than fp32 and each sentence: the duration against
fp32's, the DTW log-mel distance to fp32's (``tests/container/spectral.py``), and the word error
rate of what the offline recognizer hears (``bidi_tts_hearing``) against the sentence, beside
fp32's own. Exit 0 when every mode stays within the stated bounds, 1 when one does not, 4 for bad
input.
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

SAMPLE_RATE = 24_000
# Bounds: a duration within 3% and the spectrum within 1 dB of fp32's (the torch route against the
# int8 ONNX route is 3.3-3.8 dB apart, tests/container/real_weights.py), and no word heard
# differently from fp32's render (a WER difference of at most 0.05).
DURATION_BOUND = 0.03
LOG_MEL_BOUND_DB = 1.0
WER_BOUND = 0.05


def judge(results_dir: Path, hear: Any | None) -> tuple[list[dict[str, Any]], bool]:
    from tests.container.spectral import log_mel_distance_db

    report = json.loads((results_dir / "gpu_results.json").read_text(encoding="utf-8"))
    texts = {r["index"]: r["text"] for r in report["precision_audio"]["rows"]}
    with np.load(results_dir / "precision_audio.npz") as npz:
        audio = {name: npz[name] for name in npz.files}
    rows: list[dict[str, Any]] = []
    ok = True
    for name, render in sorted(audio.items()):
        mode, index = name.split("__")
        if mode == "fp32":
            continue
        base = audio[f"fp32__{index}"]
        text = texts[int(index)]
        row: dict[str, Any] = {"mode": mode, "text": text, "duration_ratio": len(render) / len(base),
                               "log_mel_db": log_mel_distance_db(render, base)}
        if hear is not None:
            row["wer"], row["wer_fp32"] = hear(render, text), hear(base, text)
        row["ok"] = (abs(row["duration_ratio"] - 1) <= DURATION_BOUND and row["log_mel_db"] <= LOG_MEL_BOUND_DB
                     and (hear is None or row["wer"] <= row["wer_fp32"] + WER_BOUND))
        ok = ok and row["ok"]
        rows.append(row)
    return rows, ok


def recognizer() -> Any | None:
    from bidi_tts_hearing import recognizer as make
    from bidi_tts_hearing import unavailable_reason
    from bidi_tts_hearing.text import word_error_rate

    if (reason := unavailable_reason()) is not None:
        print(f"judge_precision: words not heard ({reason})", file=sys.stderr)
        return None
    ears = make()

    def hear(audio: np.ndarray, text: str) -> float:
        pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()
        return float(word_error_rate(text, ears.transcribe(pcm, SAMPLE_RATE)))

    return hear


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("results_dir", type=Path, help="the bundle's results folder (gpu_results.json, precision_audio.npz)")
    p.add_argument("--json", type=Path, help="write the rows here")
    p.add_argument("--no-hearing", action="store_true", help="skip the recognizer (durations and spectra only)")
    args = p.parse_args(argv)
    for name in ("gpu_results.json", "precision_audio.npz"):
        if not (args.results_dir / name).is_file():
            print(f"judge_precision: {args.results_dir / name} not found", file=sys.stderr)
            return 4
    rows, ok = judge(args.results_dir, None if args.no_hearing else recognizer())
    if not rows:
        print("judge_precision: only fp32 renders here (a CPU run): nothing to compare", file=sys.stderr)
        return 4
    for row in rows:
        words = f", WER {row['wer']:.2f} (fp32 {row['wer_fp32']:.2f})" if "wer" in row else ""
        print(f"{row['mode']:5s} {'ok  ' if row['ok'] else 'FAIL'} duration {row['duration_ratio'] - 1:+.1%}, "
              f"log-mel {row['log_mel_db']:.2f} dB{words}: {row['text'][:60]}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
