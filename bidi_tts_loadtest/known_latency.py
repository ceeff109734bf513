"""A minimal container with an exactly known, injected time to first audio (for accuracy checks).

Speaks the wire protocol of CONTRACT.md on ``/invocations-bidirectional-stream`` with no synthesis
work at all: per message it sends ``synthesis_start``, sleeps ``ttfa_ms``, then ``frames`` audio
frames of precomputed silence ``frame_interval_ms`` apart, then ``synthesis_complete``. The
``synthesis_complete`` frame carries ``server_ttfa_ms``: what the server itself measured from the
moment it could start the message (its arrival, or the previous message's end) to the write of
the first audio frame, so a client can compare its own measurement message by message.

    uv run python -m loadtest.known_latency --port PORT --ttfa-ms 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from bidi_tts import protocol


async def _session(ws: ServerConnection, ttfa_s: float, frames: int, frame: bytes, interval_s: float) -> None:
    queue: asyncio.Queue[tuple[float, str | bytes]] = asyncio.Queue()

    async def reader() -> None:
        async for data in ws:
            await queue.put((time.perf_counter(), data))
        await queue.put((time.perf_counter(), b""))

    task = asyncio.create_task(reader())
    prev_done = 0.0
    try:
        while True:
            arrived, data = await queue.get()
            if data == b"":
                return
            try:
                message = protocol.parse_client_message(data)
            except protocol.ProtocolError as exc:
                await ws.send(protocol.error_from(exc))
                continue
            if isinstance(message, protocol.CloseRequest):
                await ws.close(1000)
                return
            if isinstance(message, protocol.CancelRequest):
                continue
            start = max(arrived, prev_done)
            await ws.send(protocol.synthesis_start(message.request_id, message.sample_rate))
            await asyncio.sleep(max(0.0, start + ttfa_s - time.perf_counter()))
            first = time.perf_counter()
            await ws.send(frame)
            for _ in range(frames - 1):
                if interval_s:
                    await asyncio.sleep(interval_s)
                await ws.send(frame)
            body = json.loads(protocol.synthesis_complete(message.request_id, len(frame) * frames,
                                                          message.sample_rate))
            body["server_ttfa_ms"] = (first - start) * 1000
            await ws.send(json.dumps(body))
            prev_done = time.perf_counter()
    except ConnectionClosed:
        return
    finally:
        task.cancel()


async def serve_forever(host: str, port: int, ttfa_ms: float, frames: int, frame_ms: float,
                        interval_ms: float) -> None:
    frame = bytes(2 * int(protocol.DEFAULT_SAMPLE_RATE * frame_ms / 1000))

    async def handler(ws: ServerConnection) -> None:
        await _session(ws, ttfa_ms / 1000, frames, frame, interval_ms / 1000)

    async with serve(handler, host, port, max_size=None, compression=None, ping_interval=None) as server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttfa-ms", type=float, default=100.0)
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--frame-ms", type=float, default=100.0)
    parser.add_argument("--frame-interval-ms", type=float, default=0.0)
    args = parser.parse_args()
    asyncio.run(serve_forever(args.host, args.port, args.ttfa_ms, args.frames, args.frame_ms,
                              args.frame_interval_ms))


if __name__ == "__main__":
    main()
