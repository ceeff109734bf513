"""A toy container for images, on the standard library alone (the local base image has no packages): GET
/ping answers 200; the WebSocket route takes a message (TEXT or BINARY), answers synthesis_start, tone audio
at half real time (0.1 s frames) and synthesis_complete, and closes with 1000 on {"type": "close"}. With
--handle-sigterm it exits at once on SIGTERM, as a server that handles it does; without, SIGTERM's default
action applies (which the kernel never takes for a PID 1 with no handler).

    python3 toy_server.py [--port 8080] [--handle-sigterm]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import math
import signal
import struct
import sys
from array import array

WS_PATH = "/invocations-bidirectional-stream"
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
RATE = 24_000
FRAME_S = 0.1
AUDIO_S_PER_CHAR = 0.06
PACE = 0.5  # wall seconds per second of audio
OPEN: set[asyncio.StreamWriter] = set()  # sessions open (WebSocket upgraded)
BUSY: list[int] = [0]  # messages being made
DRAIN_S = 20.0


def tone(seconds: float) -> bytes:
    samples = array("h", (int(8000 * math.sin(2 * math.pi * 220 * i / RATE)) for i in range(int(seconds * RATE))))
    if sys.byteorder != "little":
        samples.byteswap()
    return samples.tobytes()


def frame(opcode: int, payload: bytes) -> bytes:
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    return head + payload


async def read_frame(reader: asyncio.StreamReader) -> tuple[bool, int, bytes]:
    b1, b2 = await reader.readexactly(2)
    n = b2 & 0x7F
    if n == 126:
        n = struct.unpack(">H", await reader.readexactly(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", await reader.readexactly(8))[0]
    mask = await reader.readexactly(4) if b2 & 0x80 else b"\0\0\0\0"
    data = await reader.readexactly(n)
    return bool(b1 & 0x80), b1 & 0x0F, bytes(c ^ mask[i % 4] for i, c in enumerate(data))


async def messages(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):  # type: ignore[no-untyped-def]
    """Whole client messages (fragments joined); pings answered; ends at a close frame."""
    parts: list[bytes] = []
    while True:
        fin, opcode, data = await read_frame(reader)
        if opcode == 0x8:
            writer.write(frame(0x8, data[:2] or struct.pack(">H", 1000)))
            return
        if opcode == 0x9:
            writer.write(frame(0xA, data))
            continue
        if opcode in (0x0, 0x1, 0x2):
            parts.append(data)
            if fin:
                yield b"".join(parts)
                parts = []


async def synthesize(writer: asyncio.StreamWriter, msg: dict) -> None:  # type: ignore[type-arg]
    BUSY[0] += 1
    try:
        await _synthesize(writer, msg)
    finally:
        BUSY[0] -= 1


async def _synthesize(writer: asyncio.StreamWriter, msg: dict) -> None:  # type: ignore[type-arg]
    rid = msg.get("request_id")
    text = str(msg.get("text", ""))
    writer.write(frame(0x1, json.dumps({"type": "synthesis_start", "request_id": rid, "sample_rate": RATE,
                                        "encoding": "pcm_s16le", "channels": 1}).encode()))
    pcm = tone(max(0.2, len(text) * AUDIO_S_PER_CHAR))
    step = int(FRAME_S * RATE) * 2
    for offset in range(0, len(pcm), step):
        writer.write(frame(0x2, pcm[offset : offset + step]))
        await writer.drain()
        await asyncio.sleep(FRAME_S * PACE)
    writer.write(frame(0x1, json.dumps({"type": "synthesis_complete", "request_id": rid, "audio_bytes": len(pcm),
                                        "duration_s": len(pcm) / 2 / RATE}).encode()))
    await writer.drain()


async def websocket(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, key: str) -> None:
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    writer.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
    OPEN.add(writer)
    try:
        await _session(reader, writer)
    finally:
        OPEN.discard(writer)


async def _session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    async for data in messages(reader, writer):
        try:
            msg = json.loads(data)
        except ValueError:
            msg = None
        if not isinstance(msg, dict) or not str(msg.get("text", "")).strip():
            if isinstance(msg, dict) and msg.get("type") == "close":
                writer.write(frame(0x8, struct.pack(">H", 1000)))
                await writer.drain()
                return
            writer.write(frame(0x1, json.dumps({"type": "error", "request_id": None, "code": "text_required",
                                                "message": "This toy takes a message with text."}).encode()))
            continue
        await synthesize(writer, msg)


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        request = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        line, *header_lines = request.split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
        path = line.split(" ")[1] if " " in line else ""
        if path.split("?")[0] == WS_PATH and "sec-websocket-key" in headers:
            await websocket(reader, writer, headers["sec-websocket-key"])
        elif path == "/ping":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK")
        else:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--handle-sigterm", action="store_true")
    args = parser.parse_args()
    server = await asyncio.start_server(serve, "0.0.0.0", args.port)
    stop = asyncio.Event()
    if args.handle_sigterm:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"toy server on :{args.port} (SIGTERM {'handled' if args.handle_sigterm else 'not handled'})", flush=True)
    async with server:
        await stop.wait()
        # Drain: take no new connection, finish the message being made, close each session with 1001.
        server.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_S
        while BUSY[0] and loop.time() < deadline:  # noqa: ASYNC110  (a poll: the toy keeps no event per message)
            await asyncio.sleep(0.02)
        for writer in list(OPEN):
            writer.write(frame(0x8, struct.pack(">H", 1001)))
            try:
                await writer.drain()
            except ConnectionError:
                pass
            writer.close()


if __name__ == "__main__":
    asyncio.run(main())
