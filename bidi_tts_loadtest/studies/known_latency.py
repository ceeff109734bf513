"""A minimal container with an exactly known, injected time to first audio (for accuracy checks).

Speaks the wire protocol of CONTRACT.md on ``/invocations-bidirectional-stream`` with no synthesis
work at all: per message it sends ``synthesis_start``, sleeps ``ttfa_ms``, then ``frames`` audio
frames of a precomputed quiet tone (-20 dBFS, audible from its first sample) ``frame_interval_ms``
apart, then ``synthesis_complete``. ``--leading-silence-ms`` puts that much digital silence before
the tone, in frames of its own sent back to back with it (first audible sample = first byte + the
silence). The
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

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from bidi_tts import protocol
from bidi_tts.audio import float_to_pcm16


def tone_frames(frames: int, frame_ms: float, leading_silence_ms: float) -> tuple[list[bytes], list[bytes]]:
    """(silent frames, tone frames): the leading silence, then `frames` frames of a 440 Hz tone at
    -20 dBFS peak whose first sample is already audible (a cosine starts at its peak)."""
    rate = protocol.DEFAULT_SAMPLE_RATE
    n = int(rate * frame_ms / 1000)
    t = np.arange(n * frames) / rate
    tone = float_to_pcm16(0.1 * np.cos(2 * np.pi * 440.0 * t))
    silence = bytes(2 * int(rate * leading_silence_ms / 1000))
    silent = [silence[i : i + 2 * n] for i in range(0, len(silence), 2 * n)]
    return silent, [tone[i : i + 2 * n] for i in range(0, len(tone), 2 * n)]


async def _session(ws: ServerConnection, ttfa_s: float, silent: list[bytes], tones: list[bytes],
                   interval_s: float) -> None:
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
            for frame in silent:
                await ws.send(frame)
            for index, frame in enumerate(tones):
                if index and interval_s:
                    await asyncio.sleep(interval_s)
                await ws.send(frame)
            total = sum(map(len, silent)) + sum(map(len, tones))
            body = json.loads(protocol.synthesis_complete(message.request_id, total, message.sample_rate))
            body["server_ttfa_ms"] = (first - start) * 1000
            await ws.send(json.dumps(body))
            prev_done = time.perf_counter()
    except ConnectionClosed:
        return
    finally:
        task.cancel()


async def serve_forever(host: str, port: int, ttfa_ms: float, frames: int, frame_ms: float,
                        interval_ms: float, leading_silence_ms: float = 0.0) -> None:
    silent, tones = tone_frames(frames, frame_ms, leading_silence_ms)

    async def handler(ws: ServerConnection) -> None:
        await _session(ws, ttfa_ms / 1000, silent, tones, interval_ms / 1000)

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
    parser.add_argument("--leading-silence-ms", type=float, default=0.0,
                        help="digital silence before the tone of each message (default 0)")
    args = parser.parse_args()
    if min(args.ttfa_ms, args.frame_ms, args.frame_interval_ms, args.leading_silence_ms) < 0 or args.frames < 1:
        parser.error("times must be >= 0 and --frames at least 1")
    asyncio.run(serve_forever(args.host, args.port, args.ttfa_ms, args.frames, args.frame_ms,
                              args.frame_interval_ms, args.leading_silence_ms))


if __name__ == "__main__":
    main()
