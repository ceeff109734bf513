"""Soak: N sessions for T minutes against a container; resource and latency drift, start vs end.

    uv run python bench/container/soak.py --sessions 4 --minutes 5                  # starts the reference container
    uv run python bench/container/soak.py --container-url http://127.0.0.1:8080 --pid 1234 --minutes 30

Each session loops: open a WebSocket, send a few short messages one after another (each waiting for
its synthesis_complete), close with {"type": "close"}. Every few seconds the container process's
RSS, open file descriptors and threads are sampled from /proc. At the end the first and last fifth
of the run are compared: resources and median time to first audio should stay flat (within 20%), and
protocol errors (violations, error frames, unexpected closes) should be zero.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bidi_tts.frames import FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession, ErrorReceived, SynthesisCompleted
from bidi_tts.transports.base import TransportError
from bidi_tts.transports.websocket import WebSocketTransport
from bidi_tts_conformance.local_target import container_at

TEXTS = ["Hello there.", "How can I help you today?", "Your order has shipped.", "Thanks for calling."]
FLAT_WITHIN = 0.20


@dataclass
class Sample:
    at: float
    rss_mb: float
    fds: int
    threads: int


@dataclass
class Run:
    started: float
    ttfa: list[tuple[float, float]] = field(default_factory=list)  # (at, seconds)
    samples: list[Sample] = field(default_factory=list)
    messages: int = 0
    sessions: int = 0
    protocol_errors: list[str] = field(default_factory=list)


def proc_sample(pid: int, at: float) -> Sample:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss_kb = int(fields["VmRSS"].split()[0])
    threads = int(fields["Threads"].strip())
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return Sample(at, rss_kb / 1024, fds, threads)


async def one_session(url: str, run: Run, messages: int, deadline_s: float) -> None:
    transport = await WebSocketTransport.open(url)
    session = ClientSession()
    try:
        for i in range(messages):
            request = SynthesizeRequest(TEXTS[(run.messages + i) % len(TEXTS)])
            await transport.send(session.synthesize(request, at=time.perf_counter()), kind=FrameKind.BINARY)
            end = time.monotonic() + deadline_s
            done = False
            while not done:
                frame = await transport.receive(timeout=max(0.0, end - time.monotonic()))
                for event in session.receive_frame(frame):
                    if isinstance(event, ErrorReceived):
                        run.protocol_errors.append(f"error frame {event.code}")
                        done = True
                    elif isinstance(event, SynthesisCompleted):
                        done = True
            record = session.records[request.request_id]
            if record.ttfa_s is not None:
                run.ttfa.append((record.first_audio_at or 0.0, record.ttfa_s))
            run.messages += 1
        await transport.send(session.close())
        closed = await transport.wait_closed(timeout=deadline_s)
        if closed.code != 1000:
            run.protocol_errors.append(f"closed with {closed.code}, not 1000")
    except TransportError as exc:
        run.protocol_errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        await transport.close()
    run.protocol_errors.extend(f"{v.clause}: {v.description}" for v in session.violations
                               if v.severity == "error")
    run.sessions += 1


async def soak(url: str, pid: int | None, sessions: int, seconds: float, messages: int) -> Run:
    run = Run(started=time.perf_counter())
    stop_at = run.started + seconds

    async def worker() -> None:
        while time.perf_counter() < stop_at:
            await one_session(url, run, messages, deadline_s=60)

    async def sampler() -> None:
        while time.perf_counter() < stop_at:
            if pid is not None:
                run.samples.append(proc_sample(pid, time.perf_counter()))
            elapsed = time.perf_counter() - run.started
            print(f"soak: {elapsed:6.0f}s sessions={run.sessions} messages={run.messages} "
                  f"errors={len(run.protocol_errors)}"
                  + (f" rss={run.samples[-1].rss_mb:.0f}MB fds={run.samples[-1].fds}" if run.samples else ""),
                  flush=True)
            await asyncio.sleep(min(5.0, max(0.1, stop_at - time.perf_counter())))

    await asyncio.gather(sampler(), *(worker() for _ in range(sessions)))
    if pid is not None:
        run.samples.append(proc_sample(pid, time.perf_counter()))
    return run


def window(values: list[tuple[float, float]], start: float, end: float) -> list[float]:
    return [v for at, v in values if start <= at <= end]


def summarize(run: Run, sessions: int) -> dict[str, object]:
    # The windows start once load is on (the first audio), so an idle first sample does not count.
    begin = min((at for at, _ in run.ttfa), default=run.started)
    end = max([begin] + [at for at, _ in run.ttfa] + [s.at for s in run.samples])
    fifth = (end - begin) / 5
    first, last = (begin, begin + fifth), (end - fifth, end)
    rows: dict[str, dict[str, float | bool | None]] = {}

    def compare(name: str, series: list[tuple[float, float]], slack: float = 0.0) -> None:
        a, b = window(series, *first), window(series, *last)
        if not a or not b:
            rows[name] = {"start": None, "end": None, "drift": None, "flat": None}
            return
        start_v, end_v = statistics.median(a), statistics.median(b)
        drift = (end_v - start_v) / start_v if start_v else 0.0
        flat = abs(drift) <= FLAT_WITHIN or abs(end_v - start_v) <= slack
        rows[name] = {"start": round(start_v, 3), "end": round(end_v, 3), "drift": round(drift, 3),
                      "flat": flat}

    compare("ttfa_ms", [(at, v * 1000) for at, v in run.ttfa])
    compare("rss_mb", [(s.at, s.rss_mb) for s in run.samples])
    # Each session in flight holds a socket or two: that much movement is load, not a leak.
    compare("open_fds", [(s.at, float(s.fds)) for s in run.samples], slack=2 * sessions)
    compare("threads", [(s.at, float(s.threads)) for s in run.samples])
    flat = all(r["flat"] is not False for r in rows.values())
    return {
        "seconds": round(end - run.started, 1), "sessions": run.sessions, "messages": run.messages,
        "protocol_errors": len(run.protocol_errors), "first_errors": run.protocol_errors[:10],
        "drift": rows, "flat": flat, "ok": flat and not run.protocol_errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--container-url",
                        help="a running container (default: start the reference container)")
    parser.add_argument("--pid", type=int, help="the container's process id, for RSS and fd sampling")
    parser.add_argument("--sessions", type=int, default=4, help="concurrent sessions (default 4)")
    parser.add_argument("--minutes", type=float, default=2.0, help="soak length (default 2)")
    parser.add_argument("--messages", type=int, default=3, help="messages per session before it closes")
    parser.add_argument("--json", type=Path, help="write the summary here")
    args = parser.parse_args()

    with container_at(args.container_url, "soak") as (url, started):
        pid = started.pid if started is not None else args.pid
        run = asyncio.run(soak(url, pid, args.sessions, args.minutes * 60, args.messages))
    summary = summarize(run, args.sessions)
    print(f"\n{'metric':<10} {'start':>10} {'end':>10} {'drift':>8}  flat")
    for name, row in summary["drift"].items():  # type: ignore[union-attr]
        print(f"{name:<10} {row['start']!s:>10} {row['end']!s:>10} {row['drift']!s:>8}  {row['flat']}")
    print(f"\nsessions={summary['sessions']} messages={summary['messages']} "
          f"protocol_errors={summary['protocol_errors']} -> {'OK' if summary['ok'] else 'NOT FLAT / ERRORS'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary | {"samples": [asdict(s) for s in run.samples]}, indent=2))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
