"""The torch route (weights rebuilt from the int8 ONNX model) against the ONNX route, by numbers and by ear.

    uv run python bench/container/torch_vs_onnx.py --json torch_vs_onnx.json          # 8 sentences x 4 voices
    uv run python bench/container/torch_vs_onnx.py --sentences 2 --voices af_heart    # a short run

For each sentence and voice, both routes render the same phonemes with the same style row (the torch
side with Kokoro's random source draws pinned to zero, like the export). Prints per pair: duration
ratio, DTW log-mel distance (tests/container/spectral.py) and the word error rate of the torch
route's transcript against the ONNX route's (faster-whisper, the project's recognizer); then the
same distance for two wrong mappings (decoder blocks decode.1/decode.2 swapped; the duration LSTM's
gates left in ONNX order), which a tolerance must reject. This is the measurement behind the
tolerances in tests/container/real_weights.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

MORE_SENTENCES = (
    "Your order shipped yesterday from our Denver warehouse.",
    "Is there anything else you would like me to look into today?",
    "She sells sea shells by the sea shore, and the shells she sells are surely seashells.",
    "A journey of a thousand miles begins with a single step.",
    "The meeting has been moved to three thirty on Friday afternoon.",
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sentences", type=int, default=8, help="how many of the fixed sentences (1-8)")
    p.add_argument("--voices", nargs="+", default=["af_heart", "am_adam", "bf_emma", "bm_george"])
    p.add_argument("--no-hearing", action="store_true", help="skip the recognizer (numbers only)")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if not 1 <= args.sentences <= 8:
        print("torch_vs_onnx: --sentences must be 1 to 8", file=sys.stderr)
        return 2
    from tests.container import real_weights as rw

    try:
        routes = rw.Routes()
    except FileNotFoundError as exc:
        print(f"torch_vs_onnx: {exc}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.voices) - set(routes.packs))
    if unknown:
        print(f"torch_vs_onnx: unknown voice(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    ears = None
    if not args.no_hearing:
        from bidi_tts_hearing import recognizer

        ears = recognizer()
    from bidi_tts_hearing.text import word_error_rate

    texts = (rw.SENTENCES + MORE_SENTENCES)[: args.sentences]
    rows = []
    started = time.perf_counter()
    for voice in args.voices:
        for text in texts:
            pair = routes.pair(text, voice)
            row = {"voice": voice, "text": text, "duration_ratio": pair.duration_ratio,
                   "log_mel_db": pair.log_mel_db}
            if ears is not None:
                heard_onnx = ears.transcribe(rw.pcm16(pair.onnx_audio), rw.SAMPLE_RATE)
                heard_torch = ears.transcribe(rw.pcm16(pair.torch_audio), rw.SAMPLE_RATE)
                row |= {"heard_onnx": heard_onnx, "heard_torch": heard_torch,
                        "wer": word_error_rate(heard_onnx, heard_torch)}
            rows.append(row)
            print(f"{voice:>10} dur {row['duration_ratio']:.4f} log-mel {row['log_mel_db']:5.2f} dB"
                  + (f" WER {row['wer']:.3f}" if "wer" in row else "") + f"  {text[:40]}", flush=True)
    controls = {"swapped decode.1/decode.2": rw.swapped(routes.state, "decoder.decode.1", "decoder.decode.2"),
                "duration LSTM gates in ONNX order": rw.onnx_gate_order(routes.state, "predictor.lstm")}
    control_rows = []
    for name, state in controls.items():
        model = routes.kmodel(state)
        for voice in args.voices[:2]:
            for text in texts[:2]:
                pair = routes.pair(text, voice, model=model)
                control_rows.append({"control": name, "voice": voice, "text": text,
                                     "duration_ratio": pair.duration_ratio, "log_mel_db": pair.log_mel_db})
                print(f"control {name!r} {voice} dur {pair.duration_ratio:.4f} log-mel {pair.log_mel_db:5.2f} dB",
                      flush=True)
    summary = {
        "pairs": len(rows),
        "log_mel_db_max": max(r["log_mel_db"] for r in rows),
        "log_mel_db_mean": sum(r["log_mel_db"] for r in rows) / len(rows),
        "duration_dev_max": max(abs(r["duration_ratio"] - 1) for r in rows),
        "wer_max": max((r["wer"] for r in rows if "wer" in r), default=None),
        "control_log_mel_db_min": min(r["log_mel_db"] for r in control_rows),
        "tolerances": {"log_mel_db": rw.LOG_MEL_TOLERANCE_DB, "duration": rw.DURATION_TOLERANCE,
                       "wer": rw.MAX_WER},
        "seconds": time.perf_counter() - started,
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "pairs": rows, "controls": control_rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
