"""A correct toy container: CONTRACT.md section 1 with a sine-tone synthesizer and tunable latency.

Used where a test needs a fast, predictable peer (transports, gateway, load-test accuracy, the
suite's own self-tests). Latencies are injected exactly so measurements can be compared to truth.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import struct
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from bidi_tts.chunker import split_sentences
from bidi_tts.local_container import free_port


@dataclass(slots=True)
class ToyConfig:
    first_audio_delay_s: float = 0.0  # before the first audio frame of each sentence
    audio_s_per_char: float = 0.02  # audio length per character of text
    frame_s: float = 0.1  # audio per frame
    realtime_factor: float = 0.0  # seconds of wall time per second of audio (0: as fast as possible)
    voices: frozenset[str] = frozenset({"af_heart", "af_bella", "am_adam", "bf_emma"})


def tone(seconds: float, sample_rate: int, freq: float = 220.0) -> bytes:
    # numpy, not a Python loop: the same bytes, and 22 s of tone costs the toy's thread (and the GIL of the
    # test process it shares) 26 ms, not 350 (health.busy.1 would see a pure-Python toy as busy-blocked).
    n = max(1, int(seconds * sample_rate))
    return (8000 * np.sin(2 * math.pi * freq * np.arange(n) / sample_rate)).astype("<i2").tobytes()


class ToySynthesizer:
    def __init__(self, config: ToyConfig) -> None:
        self.config = config

    async def stream(self, request: protocol.SynthesizeRequest) -> AsyncIterator[bytes]:
        cfg = self.config
        for sentence in split_sentences(request.text) or [request.text]:
            if cfg.first_audio_delay_s:
                await asyncio.sleep(cfg.first_audio_delay_s)
            pcm = tone(len(sentence) * cfg.audio_s_per_char / request.speed, request.sample_rate)
            step = max(2, int(cfg.frame_s * request.sample_rate) * 2)
            for offset in range(0, len(pcm), step):
                chunk = pcm[offset : offset + step]
                if cfg.realtime_factor:
                    await asyncio.sleep(len(chunk) / 2 / request.sample_rate * cfg.realtime_factor)
                yield chunk


def _requested_format(body: bytes) -> str:
    try:
        value = json.loads(body).get("format", "pcm")
    except (ValueError, AttributeError):
        return "pcm"
    return value if isinstance(value, str) else "pcm"


def wav_header(sample_rate: int) -> bytes:
    """A streaming WAV header: RIFF and data sizes unknown (0xFFFFFFFF), PCM s16le mono."""
    unknown = 0xFFFFFFFF
    return (b"RIFF" + struct.pack("<I", unknown) + b"WAVE" + b"fmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16) + b"data" + struct.pack("<I", unknown))


async def _with_wav_header(pcm: AsyncIterator[bytes], sample_rate: int) -> AsyncIterator[bytes]:
    yield wav_header(sample_rate)
    async for chunk in pcm:
        yield chunk


class ToyContainer:
    """Builds the Starlette app. Subclass and override a hook to break one clause."""

    ping_methods: tuple[str, ...] = ("GET", "POST")  # SageMaker's guide names both (health.ping.post.1)

    def __init__(self, config: ToyConfig | None = None) -> None:
        self.config = config or ToyConfig()
        self.synth = ToySynthesizer(self.config)
        self.limits = protocol.Limits(voices=self.config.voices)
        self.frames_received: list[str] = []  # "text"/"binary" per client message, for tests

    # -- hooks --------------------------------------------------------------------------------
    async def receive_message(self, ws: WebSocket) -> bytes | str | None:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return None
        if message.get("text") is not None:
            self.frames_received.append("text")
            return str(message["text"])
        self.frames_received.append("binary")
        return bytes(message.get("bytes") or b"")

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        async for chunk in self.synth.stream(request):
            await ws.send_bytes(chunk)
            total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))

    async def on_close_request(self, ws: WebSocket) -> None:
        await ws.close(protocol.CloseCode.NORMAL)

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        """One client message, validated (raises the coded ProtocolError)."""
        return protocol.parse_client_message(data, self.limits)

    async def requests(self, ws: WebSocket) -> AsyncIterator[protocol.ClientMessage]:
        """Every client message until the client leaves, parsed by :meth:`parse`; one that fails is
        answered with its coded error frame and skipped (the session stays usable)."""
        while (data := await self.receive_message(ws)) is not None:
            try:
                message = self.parse(data)
            except protocol.ProtocolError as exc:
                await ws.send_text(protocol.error_from(exc))
                continue
            yield message

    # -- routes -------------------------------------------------------------------------------
    async def ping(self, request: Request) -> Response:
        return Response(status_code=200)

    async def invocations(self, request: Request) -> Response:
        try:
            parsed = self.parse(await request.body())
        except protocol.ProtocolError as exc:
            return JSONResponse({"code": exc.code.value, "message": exc.message}, status_code=400)
        if not isinstance(parsed, protocol.SynthesizeRequest):
            return JSONResponse({"code": "unknown_type", "message": "POST takes a synthesize message."}, 400)
        fmt = _requested_format(await request.body())
        if fmt not in ("pcm", "wav"):
            return JSONResponse({"code": "bad_format", "message": "format must be pcm or wav."}, 400)
        if fmt == "wav":
            return StreamingResponse(_with_wav_header(self.synth.stream(parsed), parsed.sample_rate),
                                     media_type="audio/wav")
        return StreamingResponse(self.synth.stream(parsed), media_type="audio/pcm")

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            async for message in self.requests(ws):
                if isinstance(message, protocol.CloseRequest):
                    await self.on_close_request(ws)
                    return
                if isinstance(message, protocol.CancelRequest):
                    continue
                await self.synthesize(ws, message)
        except WebSocketDisconnect:
            return

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/ping", self.ping, methods=list(self.ping_methods)),
            Route("/invocations", self.invocations, methods=["POST"]),
            WebSocketRoute(protocol.WS_PATH, self.websocket),
        ])


class ServerThread:
    """Runs an ASGI app with uvicorn on 127.0.0.1 in a background thread (for tests)."""

    def __init__(self, app: Starlette, port: int | None = None) -> None:
        self.port = port or free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    ws="websockets-sansio", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("toy server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the correct toy container.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--first-audio-delay", type=float, default=0.0)
    args = parser.parse_args()
    app = ToyContainer(ToyConfig(first_audio_delay_s=args.first_audio_delay)).app()
    uvicorn.run(app, host=args.host, port=args.port, ws="websockets-sansio")


if __name__ == "__main__":
    main()
