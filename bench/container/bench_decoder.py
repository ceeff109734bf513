"""Where a Kokoro unit's time goes on this machine, and whether its decoder can stream inside a sentence.

The first audio of a message waits for its whole first unit. This splits the int8 ONNX export at the
decoder's inputs (the aligned text features and the predicted F0 and energy curves, 40 frames a
second, 600 samples a frame), checks the two halves together give the whole model's audio sample for
sample, and prints:

- the encoder's time (G2P excluded) and the decoder's time by the number of frames it renders: the
  floor of any unit's first byte on this machine is the encoder plus all of that unit's frames,
  its model padding included;
- what rendering only a window of frames does to the audio (streaming inside a sentence, or not
  rendering a unit's leading near-silence): the window's audio against the same samples of the whole
  rendering (waveform SNR, loudness ratio, log-mel distance). The decoder normalizes its layers over
  the whole time axis (instance norm) and runs its harmonic source's phase from the first frame, so
  a window is a different rendering, not a piece of the same one.

    uv run python bench/container/bench_decoder.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FRAME = 600  # samples per decoder frame at 24 kHz
ENCODER_OUT = ("/encoder/MatMul_1_output_0", "/encoder/Reshape_output_0", "/encoder/Reshape_1_output_0")
DURATIONS = "/encoder/Cast_output_0"
TEXTS = ("Sure,", "Sure, I can help with that.",
         "Your order shipped yesterday, and it should arrive on Thursday before noon.")
ONSETS = ("Sure,", "Hello there!", "Five fish swam; she thanked them.", "Thanks for waiting.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--voices-dir", default=os.environ.get("KOKORO_VOICES_DIR", "../shared/kokoro/voices"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not Path(args.voices_dir).is_dir():
        parser.error(f"--voices-dir {args.voices_dir}: no such folder")
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    import onnx.utils
    import onnxruntime as ort

    from reference_container import assets
    from reference_container.settings import parse_settings
    from reference_container.synthesizers.factory import build_synthesizer
    from tests.container.spectral import log_mel_distance_db

    settings = parse_settings(["--backend", "onnx"], env={"KOKORO_VOICES_DIR": args.voices_dir})
    synth = build_synthesizer(settings)
    synth.load()
    whole = synth._session  # type: ignore[attr-defined]
    model = assets.onnx_model_path(settings.weights_dir, settings.cache_dir)

    def session(path: Path) -> ort.InferenceSession:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = os.cpu_count() or 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])

    with tempfile.TemporaryDirectory() as tmp:
        enc_path, dec_path = Path(tmp, "encoder.onnx"), Path(tmp, "decoder.onnx")
        onnx.utils.extract_model(str(model), str(enc_path), ["tokens", "style", "speed"],
                                 [*ENCODER_OUT, DURATIONS], check_model=False)
        onnx.utils.extract_model(str(model), str(dec_path), [*ENCODER_OUT, "style"], ["audio"], check_model=False)
        encoder, decoder = session(enc_path), session(dec_path)
    pack = synth._bank.packs[args.voice]  # type: ignore[attr-defined]

    def inputs(text: str) -> dict[str, np.ndarray]:
        phonemes = next(iter(synth._g2p.phonemes(text)))  # type: ignore[attr-defined]
        return {"tokens": synth.tokens(phonemes), "style": pack[min(len(phonemes), len(pack)) - 1],  # type: ignore[attr-defined]
                "speed": np.array([1.0], dtype=np.float32)}

    def decode(feats: list[np.ndarray], style: np.ndarray, a: int, b: int) -> np.ndarray:
        asr, f0, energy = feats
        feed = {ENCODER_OUT[0]: asr[:, :, a:b], ENCODER_OUT[1]: f0[:, 2 * a:2 * b],
                ENCODER_OUT[2]: energy[:, 2 * a:2 * b], "style": style}
        return np.asarray(decoder.run(["audio"], feed)[0]).reshape(-1)

    def timed(call) -> float:  # type: ignore[no-untyped-def]
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000

    print(f"{'text':<32} {'frames':>6} {'whole ms':>8} {'encoder ms':>10} {'decoder ms':>10}  split == whole")
    long_feats, long_style, long_ref = [], np.zeros(0), np.zeros(0)
    for text in TEXTS:
        feed = inputs(text)
        ref = np.asarray(whole.run(["audio"], feed)[0]).reshape(-1)
        *feats, _ = encoder.run(None, feed)
        frames = feats[0].shape[-1]
        same = float(np.abs(decode(feats, feed["style"], 0, frames) - ref).max())
        whole_ms = timed(lambda feed=feed: whole.run(["audio"], feed))
        enc_ms = timed(lambda feed=feed: encoder.run(None, feed))
        dec_ms = timed(lambda feats=feats, feed=feed, frames=frames: decode(feats, feed["style"], 0, frames))
        print(f"{text[:32]:<32} {frames:>6} {whole_ms:>8.0f} {enc_ms:>10.0f} {dec_ms:>10.0f}  max |diff| {same:.1e}")
        long_feats, long_style, long_ref = feats, feed["style"], ref
    frames = long_feats[0].shape[-1]
    sizes = [n for n in (10, 20, 40, 80) if n <= frames]
    costs = [timed(lambda n=n: decode(long_feats, long_style, 0, n)) for n in sizes]
    slope, icpt = np.polyfit(sizes, costs, 1)
    print("decoder by frames: " + ", ".join(f"{n} frames {c:.0f} ms" for n, c in zip(sizes, costs, strict=True))
          + f"; fit {icpt:.0f} ms + {slope:.1f} ms a frame ({slope / (FRAME / 24_000) / 1000:.2f} s per audio s)")

    print("a window of 40 frames from the middle of the long sentence, rendered alone with context each side:")
    start = frames // 2 - 20
    ref = long_ref[start * FRAME:(start + 40) * FRAME]
    for context in (0, 8, 32):
        a, b = max(0, start - context), min(frames, start + 40 + context)
        got = decode(long_feats, long_style, a, b)[(start - a) * FRAME:(start - a + 40) * FRAME]
        snr = 10 * np.log10(float((ref ** 2).sum()) / max(float(((got - ref) ** 2).sum()), 1e-20))
        print(f"  context {context:>2} frames: SNR {snr:5.1f} dB, loudness {_rms(got) / _rms(ref):.2f} of the whole, "
              f"log-mel distance {log_mel_distance_db(ref, got):.2f} dB")

    print("not rendering a unit's leading near-silence (8 frames of it kept as context):")
    for text in ONSETS:
        feed = inputs(text)
        ref = np.asarray(whole.run(["audio"], feed)[0]).reshape(-1)
        *feats, durations = encoder.run(None, feed)
        a = max(0, int(durations.reshape(-1)[0]) - 8)
        got, ref = decode(feats, feed["style"], a, feats[0].shape[-1]), ref[a * FRAME:]
        print(f"  {text:<34} {a:>2} frames skipped: loudness {_rms(got) / _rms(ref):.2f}, "
              f"log-mel distance {log_mel_distance_db(ref, got):.2f} dB")
    return 0


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) or 1e-12


if __name__ == "__main__":
    raise SystemExit(main())
