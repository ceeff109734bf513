"""The GPU bundle's measurement (shipped as the bundle's `gpu_bundle_run.py`; `run.sh` calls it).

Runs where the project is not installed: Python 3.12 with torch, numpy and onnx, beside the bundle's
files (vendored `kokoro`, `torch_weights.py`, `torch_batch.py`, `gpu_bundle_pack.py`, `manifest.json`).
Steps, each logged with its time:

1. rebuild: the int8 ONNX model from `model.pack` (sha256 checked), the KModel weights from it by the
   project's converter, then the sha256 of their tensors against the one computed at bundle time;
2. check: the check sentence's audio duration against the ONNX route's, computed at bundle time (5%);
3. measure: time to first audio at batch 1 for the corpus's sentence lengths (eager fp32, bf16
   autocast, torch.compile of the decoder with its compile time); audio seconds per second and
   p50/p95 per-call latency at 1..64 concurrent sessions, plain and through the container's
   `Batcher`, with GPU memory and utilisation; batched passes of k equal units (the batch model's
   shared fraction); the cost split of one call (kernel time against host time, and by module).

A failed check exits 1 with one line; a failed measurement step is recorded in the JSON (`errors`)
and the run goes on, then exits 70. The JSON is written after every step, so a run cut short still
leaves what it measured.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
SAMPLE_RATE = 24_000
DURATION_TOLERANCE = 0.05
SESSIONS = (1, 4, 16, 32, 64)
BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
EXIT_BROKEN, EXIT_USAGE, EXIT_FAILED = 1, 4, 70

log = logging.getLogger("gpu_bundle")

try:
    from gpu_bundle_serving import percentile, sync  # in the bundle, beside this file
except ImportError:
    from bench.gpu_bundle_serving import percentile, sync  # in the checkout


class CheckFailed(Exception):
    """A check of the rebuilt model failed; the message is the one line printed."""


class Bundle:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest: dict[str, Any] = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        self.config: dict[str, Any] = json.loads((root / "config.json").read_text(encoding="utf-8"))
        import numpy as np

        with np.load(root / "voices.npz") as packs:
            self.voices = {name: packs[name] for name in packs.files}

    def probes(self, quick: bool) -> list[dict[str, Any]]:
        """The sentences timed at batch 1 (by the corpus's length quantiles); --quick: the shortest."""
        probes: list[dict[str, Any]] = self.manifest["probes"]
        return probes[:1] if quick else probes

    def probe(self, quick: bool) -> dict[str, Any]:
        """The one sentence of the batch and cost-split steps: the median probe (--quick: the shortest)."""
        probes = self.probes(False)
        return probes[0] if quick else probes[len(probes) // 2]

    def units(self, quick: bool) -> list[dict[str, Any]]:
        """What the sessions speak: the whole corpus (--quick: its four shortest units)."""
        corpus: list[dict[str, Any]] = self.manifest["corpus"]
        return sorted(corpus, key=lambda u: u["tokens"])[:4] if quick else corpus

    def style(self, voice: str, phonemes: str) -> Any:
        import torch

        pack = self.voices[voice]
        return torch.from_numpy(pack[min(len(phonemes), len(pack)) - 1].copy())  # [1, 256]


def _pack_module() -> Any:
    import importlib

    try:
        return importlib.import_module("bench.gpu_bundle_pack")  # in the checkout
    except ImportError:
        return importlib.import_module("gpu_bundle_pack")  # in the bundle, beside this file


def verify_state(state: dict[str, Any], want: str) -> str:
    """The state dict's sha256, which must be the one computed from the converter's output at bundle time."""
    gpu_bundle_pack = _pack_module()
    digest = gpu_bundle_pack.state_sha256(state)
    if digest != want:
        raise CheckFailed(f"rebuilt weights sha256 {digest[:16]}... differ from the bundle's {want[:16]}...")
    return digest


def rebuild(bundle: Bundle, work: Path) -> tuple[Any, dict[str, Any]]:
    """The KModel with the rebuilt weights (CPU); raises CheckFailed when a checksum differs."""
    import torch
    import torch_weights  # the bundle's copy of reference_container/torch_weights.py

    gpu_bundle_pack = _pack_module()

    started = time.perf_counter()
    try:
        onnx_path = gpu_bundle_pack.unpack(bundle.root / "model.pack", bundle.manifest["onnx"], work / "model.onnx")
    except gpu_bundle_pack.PackError as exc:
        raise CheckFailed(f"the ONNX model did not rebuild: {exc}") from exc
    unpacked = time.perf_counter() - started
    model = torch_weights.empty_kmodel(bundle.config)  # built once: its state dict is the converter's target
    state = torch_weights.convert(onnx_path, {k: tuple(v.shape) for k, v in model.state_dict().items()})
    digest = verify_state(state, bundle.manifest["weights"]["state_sha256"])
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    onnx_path.unlink()
    return model.eval(), {"unpack_s": unpacked, "rebuild_s": time.perf_counter() - started,
                          "state_sha256": digest, "tensors": len(state), "checksum": "ok"}


def check_duration(model: Any, bundle: Bundle) -> dict[str, Any]:
    """The check sentence's audio: finite, not silent, and within 5% of the ONNX route's duration."""
    import numpy as np
    import torch

    check = bundle.manifest["check"]
    with torch.inference_mode():
        audio = model(check["phonemes"], bundle.style(check["voice"], check["phonemes"]), 1.0)
    audio = audio.detach().float().cpu().numpy().reshape(-1)
    seconds = len(audio) / SAMPLE_RATE
    ratio = seconds / check["onnx_duration_s"]
    rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2))) if len(audio) else 0.0
    if not np.isfinite(audio).all() or rms < 1e-3:
        raise CheckFailed(f"the check sentence's audio is not speech-like (rms {rms:.2g}, finite "
                          f"{bool(np.isfinite(audio).all())})")
    if abs(ratio - 1) > DURATION_TOLERANCE:
        raise CheckFailed(f"check sentence lasts {seconds:.3f} s, the ONNX route {check['onnx_duration_s']:.3f} s "
                          f"({(ratio - 1) * 100:+.1f}%, tolerance 5%)")
    return {"text": check["text"], "torch_duration_s": seconds, "onnx_duration_s": check["onnx_duration_s"],
            "ratio": ratio, "rms": rms}


def timed_call(model: Any, device: str, phonemes: str, style: Any) -> tuple[float, float]:
    """(wall seconds to the audio on the host, audio seconds) of one batch-1 call."""
    import torch

    sync(device)
    started = time.perf_counter()
    with torch.inference_mode():
        audio = model(phonemes, style, 1.0)
    audio = audio.cpu()  # the host has the audio: what a session could send
    return time.perf_counter() - started, audio.numel() / SAMPLE_RATE


def _probe_rows(model: Any, bundle: Bundle, device: str, quick: bool, ctx: Callable[[], Any]) -> list[dict[str, Any]]:
    rows = []
    for probe in bundle.probes(quick):
        style = bundle.style("af_heart", probe["phonemes"])
        times, audio_s = [], 0.0
        for _ in range(1 if quick else 5):
            with ctx():
                wall, audio_s = timed_call(model, device, probe["phonemes"], style)
            times.append(wall * 1000)
        rows.append({"tokens": probe["tokens"], "chars": len(probe["text"]), "audio_s": audio_s,
                     "ms": times, "median_ms": percentile(times, 50)})
    return rows


def _log_rows(name: str, rows: list[dict[str, Any]]) -> None:
    log.info("ttfa %s: %s", name, ", ".join(f"{r['tokens']} tok {r['median_ms']:.1f} ms" for r in rows))


def ttfa_batch1(model: Any, bundle: Bundle, device: str, quick: bool) -> dict[str, Any]:
    """Batch-1 call time (to the audio on the host) per probe sentence: eager fp32, then bf16 autocast."""
    import torch

    modes: dict[str, Any] = {"eager_fp32": _probe_rows(model, bundle, device, quick, contextlib.nullcontext)}
    _log_rows("eager_fp32", modes["eager_fp32"])
    try:
        modes["bf16_autocast"] = _probe_rows(
            model, bundle, device, quick, lambda: torch.autocast(device_type=device, dtype=torch.bfloat16))
        _log_rows("bf16_autocast", modes["bf16_autocast"])
    except RuntimeError as exc:
        if device != "cpu":
            raise
        # oneDNN has no bf16 LSTM on many CPUs; the mode is a GPU question.
        modes["bf16_autocast"] = {"unsupported_on_cpu": str(exc).splitlines()[0][:200]}
    return modes


def ttfa_compiled(model: Any, bundle: Bundle, device: str, quick: bool) -> dict[str, Any]:
    """The same with the decoder under torch.compile (dynamic shapes); the first calls' time is the compile.
    The last step: compiling may take minutes, and every other figure is saved before it starts."""
    import torch

    if quick:
        return {"skipped": "--quick (compiling takes minutes on a CPU)"}
    eager_decoder = model.decoder
    model.decoder = torch.compile(eager_decoder, dynamic=True)
    try:
        started = time.perf_counter()
        for probe in bundle.probes(quick)[:2]:  # compiles on the first, checks its guards on the second
            timed_call(model, device, probe["phonemes"], bundle.style("af_heart", probe["phonemes"]))
        compile_s = time.perf_counter() - started
        log.info("compiled the decoder in %.1f s", compile_s)
        rows = _probe_rows(model, bundle, device, quick, contextlib.nullcontext)
        _log_rows("compiled", rows)
        return {"compile_s": compile_s, "rows": rows}
    finally:
        model.decoder = eager_decoder


class GpuSampler:
    """Utilisation and memory from nvidia-smi every 0.5 s while a step runs (None without it)."""

    def __init__(self, device: str) -> None:
        self.tool = shutil.which("nvidia-smi") if device == "cuda" else None
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GpuSampler:
        if self.tool:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        assert self.tool
        while not self._stop.wait(0.5):
            try:
                line = subprocess.run([self.tool, "--query-gpu=utilization.gpu,memory.used",
                                       "--format=csv,noheader,nounits", "-i", "0"], capture_output=True,
                                      text=True, timeout=5).stdout.strip().splitlines()[0]
                util, mem = (float(x) for x in line.split(","))
                self.samples.append((util, mem))
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                return

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=6)

    def summary(self) -> dict[str, float | None]:
        utils = [u for u, _ in self.samples]
        return {"util_mean_pct": sum(utils) / len(utils) if utils else None,
                "util_p95_pct": percentile(utils, 95), "smi_mem_max_mib": max((m for _, m in self.samples),
                                                                               default=None)}


def concurrency_step(call: Callable[[str, Any], Any], bundle: Bundle, device: str, sessions: int,
                     seconds: float, corpus: list[dict[str, Any]]) -> dict[str, Any]:
    """`sessions` threads, each calling back to back through `corpus` for `seconds`."""
    import torch

    latencies: list[float] = []
    audio = [0.0]
    lock = threading.Lock()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    stop_at = time.perf_counter() + seconds

    def session(index: int) -> None:
        n = index * 7
        with torch.inference_mode():
            while time.perf_counter() < stop_at:
                unit = corpus[n % len(corpus)]
                n += 1
                started = time.perf_counter()
                out = call(unit["phonemes"], bundle.style("af_heart", unit["phonemes"]))
                samples = out.cpu().numel()
                with lock:
                    latencies.append(time.perf_counter() - started)
                    audio[0] += samples / SAMPLE_RATE

    with GpuSampler(device) as sampler:
        started = time.perf_counter()
        threads = [threading.Thread(target=session, args=(i,), daemon=True) for i in range(sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
    row: dict[str, Any] = {"sessions": sessions, "wall_s": wall, "calls": len(latencies),
                           "audio_s": audio[0], "audio_per_wall_s": audio[0] / wall,
                           "latency_p50_ms": (percentile(latencies, 50) or 0) * 1000,
                           "latency_p95_ms": (percentile(latencies, 95) or 0) * 1000}
    row["gpu_mem_max_mib"] = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None
    row.update(sampler.summary())
    return row


def batch_size_mean(sizes: list[int], warmed: bool) -> float | None:
    """Mean batch size of the measured step; the warm-up call, when one was made, is the first batch
    (a batch of one on its own) and is left out."""
    measured = sizes[1:] if warmed else sizes
    return sum(measured) / len(measured) if measured else None


def concurrency(model: Any, bundle: Bundle, device: str, quick: bool, seconds: float, window_ms: float,
                report: dict[str, Any], save: Callable[[], None]) -> None:
    from torch_batch import BatchedModel, Batcher

    levels = (1, 2) if quick else SESSIONS  # --quick: one session (the profile's baseline) and two
    report["concurrency"] = {"window_ms": window_ms, "seconds_per_step": seconds, "plain": [], "batched": []}
    for path in ("plain", "batched"):
        for sessions in levels:
            batcher = None
            if path == "plain":
                def call(phonemes: str, style: Any) -> Any:
                    return model(phonemes, style, 1.0)
            else:
                batcher = Batcher(model, window_s=window_ms / 1000, max_batch=sessions)
                call = BatchedModel(batcher)
            warmed = not quick
            if warmed:
                warm = bundle.manifest["corpus"][0]["phonemes"]
                call(warm, bundle.style("af_heart", warm))  # warm the path
            row = concurrency_step(call, bundle, device, sessions, seconds, bundle.units(quick))
            if batcher is not None:
                row["batch_size_mean"] = batch_size_mean(batcher.batch_sizes, warmed)
            report["concurrency"][path].append(row)
            log.info("%7s sessions=%2d audio s/s=%7.1f p50/p95=%6.0f/%6.0f ms calls=%d gpu_mem=%s util=%s",
                     path, sessions, row["audio_per_wall_s"], row["latency_p50_ms"], row["latency_p95_ms"],
                     row["calls"], _fmt(row["gpu_mem_max_mib"]), _fmt(row["util_mean_pct"]))
            save()


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def batch_passes(model: Any, bundle: Bundle, device: str, quick: bool) -> dict[str, Any]:
    """One batched forward of k copies of the median probe, by k; fits the shared fraction s of
    ``pass(k) = s * call + (1 - s) * k * call`` (the timed profile's batch model)."""
    import torch
    from torch_batch import ModelCall, batched_forward

    probe = bundle.probe(quick)
    style = bundle.style("af_heart", probe["phonemes"])
    rows: list[dict[str, Any]] = []
    for k in (1, 2) if quick else BATCH_SIZES:
        times = []
        for _ in range(1 if quick else 3):
            calls = [ModelCall(probe["phonemes"], style, 1.0) for _ in range(k)]
            sync(device)
            started = time.perf_counter()
            with torch.inference_mode():
                batched_forward(model, calls)
            sync(device)
            times.append((time.perf_counter() - started) * 1000)
        rows.append({"k": k, "median_ms": percentile(times, 50), "ms": times})
    call = rows[0]["median_ms"]
    num = sum((r["k"] * call - r["median_ms"]) * (r["k"] - 1) * call for r in rows[1:])
    den = sum(((r["k"] - 1) * call) ** 2 for r in rows[1:])
    shared = num / den if den else None
    log.info("batched passes (%d tokens): %s; shared fraction %s", probe["tokens"],
             ", ".join(f"k={r['k']} {r['median_ms']:.1f} ms" for r in rows), _fmt(shared and shared * 100) + "%")
    return {"tokens": probe["tokens"], "rows": rows, "shared_fraction": shared}


@contextlib.contextmanager
def module_timer(model: Any, device: str, totals: dict[str, float]) -> Iterator[None]:
    """Wall time per top-level stage of a call (synchronised at each stage's ends)."""
    stages = {"bert": model.bert, "bert_encoder": model.bert_encoder, "predictor.text_encoder":
              model.predictor.text_encoder, "predictor.lstm": model.predictor.lstm,
              "predictor.shared": model.predictor.shared, "text_encoder": model.text_encoder,
              "decoder": model.decoder}
    handles = []
    starts: dict[str, float] = {}
    for name, module in stages.items():
        def pre(_m: Any, _a: Any, name: str = name) -> None:
            sync(device)
            starts[name] = time.perf_counter()

        def post(_m: Any, _a: Any, _o: Any, name: str = name) -> None:
            sync(device)
            totals[name] = totals.get(name, 0.0) + (time.perf_counter() - starts[name]) * 1000

        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def cost_split(model: Any, bundle: Bundle, device: str, quick: bool) -> dict[str, Any]:
    """Kernel time against wall time for batch-1 calls (torch.profiler), and wall time by stage."""
    from torch.profiler import ProfilerActivity, profile

    probe = bundle.probe(quick)
    style = bundle.style("af_heart", probe["phonemes"])
    calls = 1 if quick else 5
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    # the profiler's own cost per op inflates a profiled call (10x on a CPU here): host time is the
    # unprofiled call's wall time less the kernels'
    plain_ms = statistics.median(timed_call(model, device, probe["phonemes"], style)[0] * 1000 for _ in range(calls))
    sync(device)
    started = time.perf_counter()
    with profile(activities=activities) as prof:
        for _ in range(calls):
            timed_call(model, device, probe["phonemes"], style)
    wall_ms = (time.perf_counter() - started) * 1000 / calls
    events = prof.key_averages()
    kernel_us = sum(getattr(e, "self_device_time_total", 0) or 0 for e in events
                    if str(getattr(e, "device_type", "")).endswith("CUDA"))
    launches = sum(e.count for e in events if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC"))
    stages: dict[str, float] = {}
    with module_timer(model, device, stages):
        for _ in range(calls):
            timed_call(model, device, probe["phonemes"], style)
    out = {"tokens": probe["tokens"], "calls": calls, "wall_ms_per_call": plain_ms,
           "wall_ms_per_call_profiled": wall_ms,
           "kernel_ms_per_call": kernel_us / 1000 / calls if device == "cuda" else None,
           "kernel_launches_per_call": launches / calls if device == "cuda" else None,
           "stage_ms_per_call": {k: v / calls for k, v in stages.items()}}
    if device == "cuda":
        out["host_ms_per_call"] = max(plain_ms - out["kernel_ms_per_call"], 0.0)
        out["kernel_fraction"] = min(out["kernel_ms_per_call"] / plain_ms, 1.0)
    log.info("cost split: %s", {k: (round(v, 2) if isinstance(v, float) else v) for k, v in out.items()
                                if k != "stage_ms_per_call"})
    log.info("stages (ms per call, synchronised): %s", {k: round(v, 1) for k, v in stages.items()})
    return out


class _Parser(argparse.ArgumentParser):
    """A usage error in one line (the project's bidi_tts.exit_codes.Parser; the bundle has no project)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def main(argv: list[str] | None = None) -> int:
    p = _Parser(prog="run.sh", description="Kokoro-82M on torch: rebuild, check, measure.")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--quick", action="store_true", help="CPU smoke run: every step once, on the shortest units")
    p.add_argument("--seconds", type=float, default=10.0, help="length of each concurrency step")
    p.add_argument("--window-ms", type=float, default=5.0, help="the Batcher's window")
    p.add_argument("--steps", default=",".join(DEFAULT_STEPS),
                   help=f"steps to run, comma-separated (default: %(default)s; also: {', '.join(LEGACY_STEPS)})")
    p.add_argument("--serving-sessions", default="1,16,64,128,256", help="LLM-paced sessions per serving step")
    p.add_argument("--serving-modes", default="bf16,tf32", help="precisions of the serving steps (CUDA)")
    p.add_argument("--batch-max", type=int, default=256, help="the serving loop's batch bound")
    p.add_argument("--serving-window-ms", type=float, default=4.0, help="the serving loop's window")
    p.add_argument("--batch-tokens", type=int, default=1500, help="the serving loop's padded-token bound (0: none)")
    p.add_argument("--llm-chars-per-s", type=float, default=80.0, help="the pace at which a session's text arrives")
    p.add_argument("--out", type=Path, help="results folder (default: $OUT, else results/ in the bundle)")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else 0
    wanted = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in DEFAULT_STEPS + LEGACY_STEPS]
    if unknown:
        print(f"run.sh: unknown step(s) {', '.join(unknown)}", file=sys.stderr)
        return EXIT_USAGE
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else HERE / "results")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"run.sh: cannot write {out}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s",
                        handlers=[logging.StreamHandler(sys.stdout), logging.FileHandler(out / "run.log")])
    if args.quick:
        args.seconds = min(args.seconds, 1.0)
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
        import torch
    except ImportError as exc:
        print(f"run.sh: {sys.executable} lacks {exc.name} (needs torch, numpy and onnx; set PYTHON)", file=sys.stderr)
        return EXIT_USAGE

    if args.device == "cuda" and not torch.cuda.is_available():
        print("run.sh: no CUDA device here (use --device cpu for a smoke run)", file=sys.stderr)
        return EXIT_USAGE
    bundle = Bundle(HERE)
    report: dict[str, Any] = {
        "bundle": {k: bundle.manifest[k] for k in ("built_at", "commit", "bytes")},
        "device": args.device, "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        "torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0],
        "quick": args.quick, "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpu_count": os.cpu_count(), "errors": {}}
    results = out / "gpu_results.json"

    def save() -> None:
        results.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")

    log.info("bundle built %s at %s; %s, torch %s", report["bundle"]["built_at"], report["bundle"]["commit"],
             report["gpu"] or "cpu", torch.__version__)
    try:
        with tempfile.TemporaryDirectory() as work:
            model, report["rebuild"] = rebuild(bundle, Path(work))
        log.info("rebuild: %d tensors in %.1f s, sha256 %s... matches", report["rebuild"]["tensors"],
                 report["rebuild"]["rebuild_s"], report["rebuild"]["state_sha256"][:16])
        model = model.to(args.device)
        report["check"] = check_duration(model, bundle)
        log.info("check: %.3f s of audio, ONNX route %.3f s (%+.1f%%)", report["check"]["torch_duration_s"],
                 report["check"]["onnx_duration_s"], (report["check"]["ratio"] - 1) * 100)
    except CheckFailed as exc:
        report["errors"]["check"] = str(exc)
        save()
        print(f"run.sh: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    save()
    steps = [(name, step) for name, step in batched_steps(model, bundle, args, out, report, save)
             + legacy_steps(model, bundle, args, report, save) if name in wanted]
    for name, step in steps:
        started = time.perf_counter()
        try:
            value = step()
            if value is not None:
                report[name] = value
        except Exception as exc:  # one step's failure must not lose the others' figures
            report["errors"][name] = f"{type(exc).__name__}: {exc}"[:500]
            log.exception("step %s failed", name)
        report.setdefault("step_s", {})[name] = time.perf_counter() - started
        save()
    report["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    log.info("results: %s", results)
    if report["errors"]:
        print(f"run.sh: {len(report['errors'])} step(s) failed: {', '.join(report['errors'])} (see {results})",
              file=sys.stderr)
        return EXIT_FAILED
    return 0


DEFAULT_STEPS = ("batched_equal", "precision_audio", "batch1_batched", "batched_throughput", "serving")
LEGACY_STEPS = ("ttfa_batch1", "concurrency", "batch_passes", "cost_split", "ttfa_compiled")


def batched_steps(model: Any, bundle: Bundle, args: Any, out: Path, report: dict[str, Any],
                  save: Callable[[], None]) -> list[tuple[str, Callable[[], Any]]]:
    """The batched route's steps (:mod:`gpu_bundle_serving`)."""
    try:
        import gpu_bundle_serving as serving_steps  # in the bundle
    except ImportError:
        from bench import gpu_bundle_serving as serving_steps  # in the checkout
    route = serving_steps.BatchedRoute(model, bundle, args.device)

    def serving() -> None:
        report["serving"] = []
        modes = [m for m in args.serving_modes.split(",") if m in serving_steps.modes_for(args.device)] or ["fp32"]
        levels = [1, 2] if args.quick else [int(x) for x in args.serving_sessions.split(",")]
        for mode in modes:
            for sessions in levels if mode == modes[0] else [x for x in levels if x >= 64] or levels[-1:]:
                row = serving_steps.serving(route, mode, sessions, 2.0 if args.quick else 12.0,
                                            batch_max=args.batch_max, batch_tokens=args.batch_tokens,
                                            window_ms=args.serving_window_ms,
                                            chars_per_s=args.llm_chars_per_s, quick=args.quick,
                                            sampler_cls=GpuSampler)
                report["serving"].append(row)
                log.info("serving %s sessions=%3d audio s/s=%7.1f first audio p50/p95=%s/%s ms underruns=%d "
                         "batch mean=%s padding=%s busy=%.0f%% mem=%s GiB util=%s", mode, sessions,
                         row["audio_per_wall_s"], _fmt(row["first_audio_p50_ms"]), _fmt(row["first_audio_p95_ms"]),
                         row["underruns"], _fmt(row["batch_mean"]), _fmt((row["padding_mean"] or 0) * 100),
                         row["loop_busy_share"] * 100, _fmt(row["peak_mem_gib"]), _fmt(row["util_mean_pct"]))
                save()

    return [
        ("batched_equal", lambda: serving_steps.batched_equal(route, args.quick)),
        ("precision_audio", lambda: serving_steps.precision_audio(route, out, args.quick)),
        ("batch1_batched", lambda: serving_steps.batch1_batched(route, args.quick)),
        ("batched_throughput", lambda: serving_steps.batched_throughput(route, args.quick, log.info)),
        ("serving", serving),
    ]


def legacy_steps(model: Any, bundle: Bundle, args: Any, report: dict[str, Any],
                 save: Callable[[], None]) -> list[tuple[str, Callable[[], Any]]]:
    """The first GPU run's steps (2026-12-04): KModel's own call, threads, the old Batcher."""
    return [
        ("ttfa_batch1", lambda: ttfa_batch1(model, bundle, args.device, args.quick)),
        ("concurrency", lambda: concurrency(model, bundle, args.device, args.quick, args.seconds,
                                            args.window_ms, report, save)),
        ("batch_passes", lambda: batch_passes(model, bundle, args.device, args.quick)),
        ("cost_split", lambda: cost_split(model, bundle, args.device, args.quick)),
        ("ttfa_compiled", lambda: ttfa_compiled(model, bundle, args.device, args.quick)),
    ]


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
