"""The GPU bundle's steps for the batched route: what the container's serving loop does on the device.

Shipped in the bundle beside ``gpu_bundle_run.py`` with the container's own
``reference_container/synthesizers/{kokoro_batched,kokoro_masked,model_loop}.py``; phonemes come
from the manifest (misaki ran at bundle time). Steps:

- ``batched_equal``: a mixed batch of the corpus's units against each unit's unbatched
  ``KModel.forward_with_tokens`` under the same generator seeds, fp32: lengths and error per item;
- ``precision_audio``: a few sentences rendered at fp32, tf32 and bf16 (same seeds), saved as
  ``precision_audio.npz`` in $OUT so that durations, spectra and words heard are judged at home;
- ``batch1_batched``: a lone unit's call through the batched code, per probe and precision;
- ``batched_throughput``: one pass of B corpus units (length-sorted windows and random mixes), per
  precision: audio-seconds per second, pass time, padding, peak memory;
- ``serving``: LLM-paced sessions through the :class:`ModelLoop` (text arrives at the LLM's pace, each
  sentence is submitted when complete, with its playback deadline): per-session first audio,
  audio-s/s, batch sizes, underruns of a real-time listener, memory and GPU busy share.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SAMPLE_RATE = 24_000


def percentile(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


class BatchedRoute:
    """The container's batched forward on the bundle's model, with a precision mode."""

    def __init__(self, model: Any, bundle: Any, device: str) -> None:
        from reference_container.synthesizers import kokoro_batched

        self.kb = kokoro_batched
        self.model = model
        self.bundle = bundle
        self.device = device
        self.vocab = bundle.config["vocab"]

    def unit(self, entry: dict[str, Any], voice: str = "af_heart", seed: int | None = None) -> Any:
        import torch

        generator = None
        if seed is not None:
            generator = torch.Generator(device=self.device).manual_seed(seed)
        return self.kb.Unit(self.kb.token_ids(self.vocab, entry["phonemes"]),
                            self.bundle.style(voice, entry["phonemes"]), 1.0, generator)

    def forward(self, units: list[Any], mode: str) -> Any:
        import torch

        with torch.inference_mode(), self.kb.precision(mode, self.device):
            return self.kb.forward_batch(self.model, units)


def modes_for(device: str) -> list[str]:
    from reference_container.synthesizers.kokoro_batched import PRECISIONS, precision_support

    return [m for m in PRECISIONS if precision_support(device)[m] == "ok"]


def batched_equal(route: BatchedRoute, quick: bool) -> dict[str, Any]:
    import numpy as np
    import torch

    corpus = sorted(route.bundle.units(quick), key=lambda u: u["tokens"])
    if quick:  # the CPU smoke run: the two shortest units of different lengths
        picks = [corpus[0], next(u for u in corpus if u["tokens"] != corpus[0]["tokens"])]
    else:
        picks = [corpus[round(q * (len(corpus) - 1))] for q in (0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.0)]
    rows = []
    wanted = []
    with torch.inference_mode():
        for i, entry in enumerate(picks):
            unit = route.unit(entry, seed=100 + i)
            torch.manual_seed(100 + i)
            ids = torch.tensor([list(unit.ids)], device=route.device)
            audio, _ = route.model.forward_with_tokens(ids, unit.ref_s.to(route.device), 1.0)
            wanted.append(audio.float().cpu().numpy())
    got = route.forward([route.unit(e, seed=100 + i) for i, e in enumerate(picks)], "fp32")
    for entry, want, have in zip(picks, wanted, got.audio, strict=True):
        have = have.numpy()
        same = have.shape == want.shape
        rows.append({"tokens": entry["tokens"], "samples": int(have.shape[0]), "unbatched_samples": int(want.shape[0]),
                     "max_err_of_peak": float(np.abs(have - want).max() / np.abs(want).max()) if same else None})
    return {"units": len(picks), "padded_frames": got.padded_frames, "frames": list(got.frames), "rows": rows,
            "same_lengths": all(r["samples"] == r["unbatched_samples"] for r in rows)}


def precision_audio(route: BatchedRoute, out: Path, quick: bool) -> dict[str, Any]:
    import numpy as np

    manifest = route.bundle.manifest
    entries = [{"text": manifest["check"]["text"], "phonemes": manifest["check"]["phonemes"]}]
    entries += [p for p in manifest["probes"][2:5]] if not quick else []
    arrays: dict[str, Any] = {}
    rows = []
    for mode in modes_for(route.device):
        for i, entry in enumerate(entries):
            audio = route.forward([route.unit(entry, seed=7 + i)], mode).audio[0].numpy()
            arrays[f"{mode}__{i}"] = audio.astype(np.float32)
            rows.append({"mode": mode, "index": i, "text": entry["text"], "seconds": len(audio) / SAMPLE_RATE})
    np.savez_compressed(out / "precision_audio.npz", **arrays)
    return {"file": "precision_audio.npz", "rows": rows}


def batch1_batched(route: BatchedRoute, quick: bool) -> dict[str, Any]:
    """A lone unit through the batched code: wall ms to the audio on the host, per probe and mode."""
    result: dict[str, Any] = {}
    probes = route.bundle.probes(quick)
    for mode in modes_for(route.device):
        rows = []
        for probe in probes:
            times = []
            for _ in range(1 if quick else 6):
                sync(route.device)
                started = time.perf_counter()
                route.forward([route.unit(probe)], mode)
                times.append((time.perf_counter() - started) * 1000)
            rows.append({"tokens": probe["tokens"], "ms": times, "median_ms": percentile(times[1:] or times, 50)})
        result[mode] = rows
    return result


def batched_throughput(route: BatchedRoute, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    import torch

    corpus = sorted(route.bundle.units(quick), key=lambda u: u["tokens"])
    sizes = (1, 2) if quick else (1, 16, 64, 128, 256)
    rows = []
    rng = random.Random(3)
    for mode in modes_for(route.device):
        for size in sizes:
            for mix in ("sorted",) if quick else ("sorted", "random"):
                if size >= 256 and mode == "fp32" and mix == "random":
                    continue  # the slowest corner; fp32's ceiling is known from B=128
                times, audio_s, padding = [], 0.0, 0.0
                for rep in range(1 if quick else 3):
                    if mix == "sorted":
                        start = rng.randrange(max(1, len(corpus) - size))
                        picks = [corpus[(start + j) % len(corpus)] for j in range(size)]
                    else:
                        picks = [rng.choice(corpus) for _ in range(size)]
                    units = [route.unit(e) for e in picks]
                    if route.device == "cuda":
                        torch.cuda.reset_peak_memory_stats()
                    sync(route.device)
                    started = time.perf_counter()
                    out = route.forward(units, mode)
                    elapsed = time.perf_counter() - started
                    if rep or quick:  # the first pass of a shape warms it
                        times.append(elapsed)
                        audio_s += sum(a.numel() for a in out.audio) / SAMPLE_RATE
                        padding = 1 - sum(out.frames) / (out.padded_frames * size)
                wall = sum(times)
                row = {"mode": mode, "batch": size, "mix": mix, "pass_ms_median": (percentile(times, 50) or 0) * 1000,
                       "audio_per_wall_s": audio_s / wall if wall else None, "padding_frames": padding,
                       "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if route.device == "cuda" else None}
                rows.append(row)
                log(f"throughput {mode} B={size:3d} {mix:6s}: {row['audio_per_wall_s'] or 0:7.1f} audio-s/s, "
                    f"pass {row['pass_ms_median']:.0f} ms, padding {padding:.0%}")
    return rows


class _Session:
    """One LLM-paced session: its text arrives at `chars_per_s`; each sentence is submitted whole."""

    def __init__(self, loop: Any, route: BatchedRoute, messages: list[list[dict[str, Any]]], chars_per_s: float,
                 stop_at: float, margin_s: float) -> None:
        self.loop, self.route, self.messages = loop, route, messages
        self.chars_per_s, self.stop_at, self.margin_s = chars_per_s, stop_at, margin_s
        self.first_audio_ms: list[float] = []
        self.underruns = 0
        self.audio_s = 0.0
        self.units = 0

    def run(self) -> None:
        index = 0
        while time.perf_counter() < self.stop_at:
            self._message(self.messages[index % len(self.messages)])
            index += 1

    def _message(self, sentences: list[dict[str, Any]]) -> None:
        start = time.perf_counter()
        arrivals, at = [], start
        for entry in sentences:
            at += len(entry["text"]) / self.chars_per_s
            arrivals.append(at)
        done: list[float | None] = [None] * len(sentences)
        audio = [0.0] * len(sentences)
        futures = []
        for k, (entry, arrive) in enumerate(zip(sentences, arrivals, strict=True)):
            time.sleep(max(0.0, arrive - time.perf_counter()))
            deadline = self._playback_end(done, audio)
            deadline = arrive if deadline is None else max(arrive, deadline - self.margin_s)
            unit = self.route.unit(entry)
            future = self.loop.submit(unit, len(unit.ids), deadline)

            def finished(f: Any, k: int = k) -> None:
                done[k] = time.perf_counter()
                audio[k] = f.result().numel() / SAMPLE_RATE if not f.exception() else 0.0
            future.add_done_callback(finished)
            futures.append(future)
        for future in futures:
            future.result()
        first = done[0]
        assert first is not None
        self.first_audio_ms.append((first - arrivals[0]) * 1000)
        play_end = first + audio[0]
        for k in range(1, len(sentences)):
            arrived = done[k]
            assert arrived is not None
            if arrived > play_end:
                self.underruns += 1
                play_end = arrived
            play_end += audio[k]
        self.audio_s += sum(audio)
        self.units += len(sentences)

    @staticmethod
    def _playback_end(done: list[float | None], audio: list[float]) -> float | None:
        if done[0] is None:
            return None
        end = done[0] + audio[0]
        for k in range(1, len(done)):
            if done[k] is None:
                break
            end = max(end, done[k]) + audio[k]  # type: ignore[type-var]
        return end


def serving(route: BatchedRoute, mode: str, sessions: int, seconds: float, *, batch_max: int, batch_tokens: int,
            window_ms: float, chars_per_s: float, quick: bool, sampler_cls: Any) -> dict[str, Any]:
    import torch

    from reference_container.synthesizers.model_loop import ModelLoop

    corpus = route.bundle.units(quick)
    messages = [corpus[i: i + 4] for i in range(0, len(corpus) - 3, 4)] or [corpus]
    loop = ModelLoop(lambda units: route.forward(units, mode).audio, batch_max=batch_max,
                     window_s=window_ms / 1000, token_budget=batch_tokens or None)
    warm = route.unit(corpus[0])
    loop(warm, len(warm.ids))
    loop.passes.clear()
    if route.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    stop_at = time.perf_counter() + seconds
    rng = random.Random(sessions)
    people = [_Session(loop, route, messages[rng.randrange(len(messages)):] + messages, chars_per_s, stop_at,
                       margin_s=0.3) for _ in range(sessions)]
    with sampler_cls(route.device) as sampler:
        started = time.perf_counter()
        threads = [threading.Thread(target=p.run, daemon=True) for p in people]
        for i, thread in enumerate(threads):
            thread.start()
            time.sleep(min(1.0, seconds / 4) / max(1, sessions))  # arrivals spread over a second
            del i
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
    loop.close()
    firsts = [ms for p in people for ms in p.first_audio_ms]
    passes = loop.passes
    busy = sum(p.seconds for p in passes)
    row: dict[str, Any] = {
        "mode": mode, "sessions": sessions, "batch_max": batch_max, "batch_tokens": batch_tokens,
        "window_ms": window_ms,
        "llm_chars_per_s": chars_per_s, "wall_s": wall, "messages": len(firsts),
        "units": sum(p.units for p in people), "audio_s": sum(p.audio_s for p in people),
        "audio_per_wall_s": sum(p.audio_s for p in people) / wall,
        "first_audio_p50_ms": percentile(firsts, 50), "first_audio_p95_ms": percentile(firsts, 95),
        "underruns": sum(p.underruns for p in people), "passes": len(passes),
        "batch_mean": sum(p.size for p in passes) / len(passes) if passes else None,
        "batch_max_seen": max((p.size for p in passes), default=0),
        "padding_mean": sum(p.padding for p in passes) / len(passes) if passes else None,
        "loop_busy_share": busy / wall,
        "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if route.device == "cuda" else None}
    row.update(sampler.summary())
    return row
