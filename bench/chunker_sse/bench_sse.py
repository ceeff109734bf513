"""SSEDecoder throughput at 100 KB and 1 MB fed in small fragments (a benchmark, not a test).

    uv run python bench/chunker_sse/bench_sse.py                 # the table for this decoder alone
    uv run python bench/chunker_sse/bench_core.py                # with the chunker, in one table

Two workloads: a realistic stream of base64 audio events (JSON data, ids, comments, mixed line
ends) and one huge event whose single data line arrives in thousands of fragments, the shape that
exposes a decoder re-scanning its buffer on every delivery. Linear decoding shows as a time ratio
of about 10 between 1 MB and 100 KB.
"""

from __future__ import annotations

import base64
import functools
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bidi_tts.sse import SSEDecoder, encode_event


def audio_event_stream(size: int) -> bytes:
    """About ``size`` bytes of audio events as a TTS relay would send them, cut at ``size``."""
    parts: list[bytes] = []
    total, i = 0, 0
    pcm = bytes(range(256)) * 2
    while total < size:
        if i % 10 == 0:
            chunk = b": keep-alive\r\n\r\n"
        elif i % 7 == 0:
            chunk = encode_event("progress\nline two", event="status", id=str(i)).replace(b"\n", b"\r\n")
        else:
            chunk = encode_event(json.dumps({"audio": base64.b64encode(pcm).decode(), "seq": i}), id=str(i))
        parts.append(chunk)
        total += len(chunk)
        i += 1
    return b"".join(parts)[:size]


def one_long_event(size: int) -> bytes:
    """One event whose data line is ``size`` bytes long, then the blank line that dispatches it."""
    return b"data: " + b"A" * max(0, size - 8) + b"\n\n"


WORKLOADS: dict[str, Callable[[int], bytes]] = {
    "audio events": audio_event_stream,
    "one long event": one_long_event,
}


def _decode_all(stream: bytes, fragment: int) -> int:
    decoder = SSEDecoder()
    count = 0
    feed = decoder.feed
    for start in range(0, len(stream), fragment):
        count += len(feed(stream[start : start + fragment]))
    decoder.close()
    return count


def _median_time(fn: Callable[[], int], repeats: int) -> tuple[float, int]:
    times, result = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def run(
    sizes: Sequence[int] = (100_000, 1_000_000), fragment: int = 8, repeats: int = 3
) -> list[dict[str, Any]]:
    """Time SSEDecoder on each workload and size, fed ``fragment`` bytes at a time.

    One row per (workload, size): ``component``, ``workload``, ``size_bytes``, ``fragment``,
    ``repeats``, ``median_s`` (median of ``repeats`` runs, perf_counter), ``mb_per_s``, ``items``
    (events dispatched).
    """
    rows: list[dict[str, Any]] = []
    for workload, make in WORKLOADS.items():
        for size in sizes:
            stream = make(size)
            seconds, events = _median_time(functools.partial(_decode_all, stream, fragment), repeats)
            rows.append({
                "component": "SSEDecoder",
                "workload": workload,
                "size_bytes": len(stream),
                "fragment": fragment,
                "repeats": repeats,
                "median_s": seconds,
                "mb_per_s": len(stream) / seconds / 1e6 if seconds > 0 else float("inf"),
                "items": events,
            })  # fmt: skip
    return rows


def main() -> None:
    """Print this benchmark's rows in the shared table format of bench_core."""
    try:
        from bench.chunker_sse.bench_core import print_table
    except ImportError:
        from bench_core import print_table  # type: ignore[no-redef]
    print_table(run())


if __name__ == "__main__":
    main()
