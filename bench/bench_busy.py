"""A busy container's accept and /ping: what SageMaker's 250 ms accept and 2 s /ping deadlines meet while
other sessions synthesize (the figures behind health.busy.1, which judges 2 s of the same).

    uv run python bench/bench_busy.py [--backend onnx] [--seconds 10] [--json OUT]
    uv run python bench/bench_busy.py --backend torch --device cpu [--weights-dir DIR --voices-dir DIR]
    uv run python bench/bench_busy.py --container-url http://127.0.0.1:8080

Without --container-url it starts the reference container (the pinned command, on a free port, with
--backend/--device and any other option as given) and stops it after. Then --sessions sessions (3) each send a long text
(1,100 characters, about 70 s of speech); once the first audio arrives, new WebSocket handshakes (open,
close, 0.1 s apart) and GET /ping (0.1 s apart) are polled side by side for --seconds, while the busy
sessions are read. Printed: handshake p50/p95/worst, /ping p50/worst, what did not answer, and the audio
the busy sessions received during the polls (the proof that they were synthesizing). Client-side times,
on the machine that runs the container, so a loaded machine shows in them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bidi_tts.frames import decode_control_frame
from bidi_tts.local_container import LocalContainer
from bidi_tts.metrics import percentile
from bidi_tts.protocol import WS_PATH
from bidi_tts_conformance.cases.busy import BUSY_TEXT, HANDSHAKE_WAIT_S, PING_WAIT_S, POLL_GAP_S

READY_TIMEOUT_S = 600.0


@dataclass
class Window:
    handshakes_s: list[float] = field(default_factory=list)
    pings_s: list[float] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    busy_frames: list[tuple[float, int]] = field(default_factory=list)  # (arrival, bytes) of busy audio
    busy_done: int = 0


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://").replace("https://", "wss://").rstrip("/") + WS_PATH


async def read_busy(ws: ClientConnection, window: Window, until: float) -> None:
    try:
        while (left := until - time.perf_counter()) > 0:
            frame = await asyncio.wait_for(ws.recv(), left)
            control = decode_control_frame(frame)
            if control is None:
                window.busy_frames.append((time.perf_counter(), len(frame)))
            elif control.get("type") in ("synthesis_complete", "error"):
                window.busy_done += 1
                return
    except (TimeoutError, ConnectionClosed):
        pass


async def poll_handshakes(url: str, window: Window, until: float) -> None:
    while time.perf_counter() < until:
        start = time.perf_counter()
        try:
            ws = await connect(ws_url(url), open_timeout=HANDSHAKE_WAIT_S, close_timeout=0.5)
        except TimeoutError:
            window.unanswered.append(f"handshake over {HANDSHAKE_WAIT_S:.0f} s")
            continue
        window.handshakes_s.append(time.perf_counter() - start)
        await ws.close()
        await asyncio.sleep(POLL_GAP_S)


async def poll_pings(http: httpx.AsyncClient, window: Window, until: float) -> None:
    while time.perf_counter() < until:
        start = time.perf_counter()
        try:
            status = (await http.get("/ping", timeout=PING_WAIT_S)).status_code
        except httpx.HTTPError as exc:
            window.unanswered.append(f"/ping {type(exc).__name__}")
            continue
        window.pings_s.append(time.perf_counter() - start)
        if status != 200:
            window.unanswered.append(f"/ping HTTP {status}")
        await asyncio.sleep(POLL_GAP_S)


async def measure(url: str, sessions: int, seconds: float) -> tuple[Window, float, float]:
    window = Window()
    busy = [await connect(ws_url(url), max_size=None, open_timeout=10) for _ in range(sessions)]
    for ws in busy:
        await ws.send(json.dumps({"text": BUSY_TEXT}))
    end_all = time.perf_counter() + 120 + seconds
    readers = [asyncio.create_task(read_busy(ws, window, end_all)) for ws in busy]
    while not window.busy_frames:
        if time.perf_counter() > end_all - seconds or all(r.done() for r in readers):
            raise SystemExit("bench_busy: no audio on the busy sessions within 120 s")
        await asyncio.sleep(0.01)
    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=url) as http:
        await asyncio.gather(poll_handshakes(url, window, start + seconds), poll_pings(http, window, start + seconds))
    end = time.perf_counter()
    for reader in readers:
        reader.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    for ws in busy:
        await ws.close()
    return window, start, end


def report(window: Window, start: float, end: float, sessions: int, label: str) -> dict[str, object]:
    hs, ps = window.handshakes_s, window.pings_s
    in_window = [n for t, n in window.busy_frames if start <= t <= end]
    row: dict[str, object] = {
        "target": label, "sessions": sessions, "window_s": round(end - start, 2),
        "handshakes": len(hs), "handshake_p50_ms": round(percentile(hs, 50) * 1000, 1) if hs else None,
        "handshake_p95_ms": round(percentile(hs, 95) * 1000, 1) if hs else None,
        "handshake_max_ms": round(max(hs) * 1000, 1) if hs else None,
        "handshakes_over_250_ms": sum(t > 0.25 for t in hs),
        "pings": len(ps), "ping_p50_ms": round(percentile(ps, 50) * 1000, 1) if ps else None,
        "ping_max_ms": round(max(ps) * 1000, 1) if ps else None,
        "unanswered": window.unanswered, "busy_audio_frames": len(in_window),
        "busy_audio_s": round(sum(in_window) / 48_000, 2), "busy_finished": window.busy_done,
    }
    print(f"{label}: {sessions} sessions busy, {row['window_s']} s of polls")
    print(f"  handshake  n={len(hs):3d}  p50 {row['handshake_p50_ms']} ms  p95 {row['handshake_p95_ms']} ms  "
          f"worst {row['handshake_max_ms']} ms   ({row['handshakes_over_250_ms']} over the 250 ms deadline)")
    print(f"  /ping      n={len(ps):3d}  p50 {row['ping_p50_ms']} ms  worst {row['ping_max_ms']} ms   "
          f"({sum(t > 2.0 for t in ps)} over the 2 s deadline)")
    missed = window.unanswered
    print(f"  unanswered {len(missed)}{': ' + ', '.join(missed[:3]) if missed else ''}")
    print(f"  busy audio during the polls: {len(in_window)} frames, {row['busy_audio_s']} s of speech; "
          f"{window.busy_done} of {sessions} messages finished")
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--container-url", help="a running container (else one is started)")
    parser.add_argument("--backend", default="onnx", choices=("onnx", "torch", "timed"))
    parser.add_argument("--device", default=None, choices=("cpu", "cuda"))
    parser.add_argument("--timed-profile", default="cpu-onnx-2core")
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--json", type=Path, help="write the figures here")
    ns, extra = parser.parse_known_args(argv)  # the rest goes to the container (--voices-dir DIR ...)
    if ns.sessions < 1 or not 0 < ns.seconds <= 120:
        print("bench_busy: --sessions must be 1 or more and --seconds in (0, 120]", file=sys.stderr)
        return 4
    proc = None
    url, label = ns.container_url, ns.container_url
    if url is None:
        args = ["--backend", ns.backend, "--log-level", "warning"]
        args += ["--device", ns.device] if ns.device else []
        args += ["--timed-profile", ns.timed_profile] if ns.backend == "timed" else []
        proc = LocalContainer(args=[*args, *extra])
        url, label = proc.url, " ".join(args[:2] + args[4:])
        print(f"bench_busy: starting the reference container ({label}); waiting for /ping 200", file=sys.stderr)
        if not proc.wait_ready(READY_TIMEOUT_S).ready:
            proc.stop()
            print(f"bench_busy: the container did not become ready (exit status {proc.returncode})", file=sys.stderr)
            return 70
    try:
        window, start, end = asyncio.run(measure(url, ns.sessions, ns.seconds))
    except OSError as exc:
        print(f"bench_busy: cannot reach {url}: {exc}", file=sys.stderr)
        return 69
    finally:
        if proc is not None:
            proc.stop()
    row = report(window, start, end, ns.sessions, label)
    if ns.json:
        ns.json.write_text(json.dumps(row, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
