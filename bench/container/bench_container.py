"""Benchmark a running reference container: time to first audio, streaming gain, RTF, concurrency.

    uv run python bench/container/bench_container.py [--container-url http://127.0.0.1:8080] [--trials 3]
                                           [--concurrency 1,4,16] [--json OUT]

Without --container-url it starts one with the pinned command on a free port and stops it after.
Times are client-side, from sending a message to its first audio frame (bidi_tts.ClientSession).
Rows, each the median over trials:
  - one sentence: the first sentence of the seeds' block, alone;
  - four sentences: the seeds' 267-character block (streaming: first audio should be within +10%
    of the one-sentence row);
  - 12 words: a 12-word sentence with no comma (target on 2 CPU cores, int8 ONNX: under 1.5 s);
  - RTF: synthesis wall time of the four-sentence block over its audio duration;
  - first audio at N concurrent sessions, each sending the one-sentence message at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession, ErrorReceived, SynthesisCompleted
from bidi_tts.transports.websocket import WebSocketTransport
from bidi_tts_conformance.local_target import container_at

SEEDS = (
    "Welcome to our streaming text-to-speech demo. This system converts text into natural sounding "
    "speech in real time. Each sentence is synthesized as soon as it arrives, so you hear the first "
    "words almost immediately. Thank you for listening to this demonstration."
)
ONE_SENTENCE = "Welcome to our streaming text-to-speech demo."
TWELVE_WORDS = "The quick brown fox jumps over the lazy dog near the river."


async def one_message(url: str, text: str, limit_s: float = 300.0) -> dict[str, float]:
    """Send one message on a fresh session; return ttfa_s, complete_s, audio_s."""
    transport = await WebSocketTransport.open(url)
    session = ClientSession()
    try:
        request = SynthesizeRequest(text=text)
        payload = session.synthesize(request, at=time.perf_counter())
        await transport.send(payload.encode())  # BINARY, as SageMaker delivers it
        deadline = time.perf_counter() + limit_s
        while True:
            frame = await transport.receive(timeout=max(0.1, deadline - time.perf_counter()))
            for event in session.receive_frame(frame):
                if isinstance(event, ErrorReceived):
                    raise RuntimeError(f"container answered {event.code}: {event.message}")
                if isinstance(event, SynthesisCompleted):
                    record = session.records[request.request_id]
                    return {"ttfa_s": record.ttfa_s or float("nan"),
                            "complete_s": record.complete_s or float("nan"),
                            "audio_s": record.audio_seconds}
    finally:
        await transport.close()


async def concurrent(url: str, text: str, n: int) -> list[dict[str, float]]:
    return list(await asyncio.gather(*(one_message(url, text) for _ in range(n))))


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def run(url: str, trials: int, levels: Sequence[int]) -> list[dict[str, Any]]:
    await one_message(url, "Warm up.")
    rows: list[dict[str, Any]] = []
    single: list[dict[str, float]] = []
    multi: list[dict[str, float]] = []
    twelve: list[dict[str, float]] = []
    for _ in range(trials):  # interleaved, so a change in machine load hits every case alike
        single.append(await one_message(url, ONE_SENTENCE))
        multi.append(await one_message(url, SEEDS))
        twelve.append(await one_message(url, TWELVE_WORDS))
    rows.append({"case": "one sentence (46 chars)", "sessions": 1,
                 "ttfa_ms": 1000 * median([r["ttfa_s"] for r in single]),
                 "complete_ms": 1000 * median([r["complete_s"] for r in single]),
                 "audio_s": median([r["audio_s"] for r in single])})
    rows.append({"case": "four sentences (267 chars)", "sessions": 1,
                 "ttfa_ms": 1000 * median([r["ttfa_s"] for r in multi]),
                 "complete_ms": 1000 * median([r["complete_s"] for r in multi]),
                 "audio_s": median([r["audio_s"] for r in multi]),
                 "rtf": median([r["complete_s"] / r["audio_s"] for r in multi])})
    rows.append({"case": "12 words, no comma", "sessions": 1,
                 "ttfa_ms": 1000 * median([r["ttfa_s"] for r in twelve]),
                 "complete_ms": 1000 * median([r["complete_s"] for r in twelve]),
                 "audio_s": median([r["audio_s"] for r in twelve])})
    for n in levels:
        results: list[dict[str, float]] = []
        for _ in range(trials if n <= 4 else 1):
            results += await concurrent(url, ONE_SENTENCE, n)
        ttfas = sorted(r["ttfa_s"] for r in results)
        rows.append({"case": "one sentence, concurrent", "sessions": n,
                     "ttfa_ms": 1000 * median(ttfas), "ttfa_max_ms": 1000 * ttfas[-1],
                     "complete_ms": 1000 * median([r["complete_s"] for r in results]),
                     "audio_s": median([r["audio_s"] for r in results])})
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = ("case", "sessions", "ttfa_ms", "ttfa_max_ms", "complete_ms", "audio_s", "rtf")
    print(" | ".join(f"{c:>26}" if c == "case" else f"{c:>11}" for c in cols))
    for row in rows:
        cells = []
        for c in cols:
            v = row.get(c, "")
            text = f"{v:.3f}" if c in ("audio_s", "rtf") and v != "" else (
                f"{v:.0f}" if isinstance(v, float) else str(v))
            cells.append(f"{text:>26}" if c == "case" else f"{text:>11}")
        print(" | ".join(cells))
    one, four = rows[0]["ttfa_ms"], rows[1]["ttfa_ms"]
    print(f"streaming: four-sentence first audio / one-sentence first audio = {four / one:.2f} "
          f"(target <= 1.10)")
    print(f"12-word first audio: {rows[2]['ttfa_ms']:.0f} ms (CPU int8 target < 1500 ms)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--container-url", help="a running container (default: start one)")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--concurrency", default="1,4,16", help="comma-separated session counts")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.concurrency.split(",") if x]
    with container_at(args.container_url, "bench") as (url, _):
        rows = asyncio.run(run(url, args.trials, levels))
    print(f"container: {url}  trials: {args.trials}  cpus: {os.cpu_count()}")
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
