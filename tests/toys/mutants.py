"""Toys with the defects that mutants of the reference container showed the suite once let pass
(issue 23, point 7): each breaks one clause the way a one-token change of real code does."""

from __future__ import annotations

import asyncio
import json
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from tests.toys.good import ToyConfig, ToyContainer, wav_header


class CancelledAlwaysToy(ToyContainer):
    """Every synthesis_complete says "cancelled": true, though nothing was cancelled."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        async for chunk in self.synth.stream(request):
            await ws.send_bytes(chunk)
            total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate,
                                                       cancelled=True))


class CancelWithoutFlagToy(ToyContainer):
    """Stops a message on {"type": "cancel"}, but its synthesis_complete does not say cancelled."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(first_audio_delay_s=0.05, realtime_factor=0.2))

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        cancel = asyncio.Event()
        work: asyncio.Task[None] | None = None

        async def run(request: protocol.SynthesizeRequest) -> None:
            await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
            total = 0
            async for chunk in self.synth.stream(request):
                if cancel.is_set():
                    break
                await ws.send_bytes(chunk)
                total += len(chunk)
            await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))

        try:
            async for message in self.requests(ws):
                if isinstance(message, protocol.CloseRequest):
                    if work is not None:
                        await work
                    await ws.close(1000)
                    return
                if isinstance(message, protocol.CancelRequest):
                    cancel.set()
                    continue
                if work is not None:
                    await work
                cancel.clear()
                work = asyncio.create_task(run(message))
        except WebSocketDisconnect:
            pass
        finally:
            if work is not None:
                work.cancel()


class PostFormat401Toy(ToyContainer):
    """POST /invocations answers a bad `format` with 401 instead of 400."""

    async def invocations(self, request: Request) -> Response:
        try:
            fmt = json.loads(await request.body()).get("format", "pcm")
        except (ValueError, AttributeError):
            fmt = "pcm"
        if isinstance(fmt, str) and fmt not in ("pcm", "wav"):
            return JSONResponse({"code": "bad_format", "message": "format must be pcm or wav."}, 401)
        return await super().invocations(request)


class QueuedCancelToy(ToyContainer):
    """Supports cancel the way the reference container does: the current message and those queued
    behind it stop; a queued one is answered with synthesis_start and a cancelled synthesis_complete.
    With `bad_bytes`, that synthesis_complete says audio_bytes -1 for the 0 bytes it carried."""

    def __init__(self, *, bad_bytes: bool = False) -> None:
        super().__init__(ToyConfig(first_audio_delay_s=0.05, realtime_factor=0.2))
        self.bad_bytes = bad_bytes

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        inbox: asyncio.Queue[protocol.SynthesizeRequest | None] = asyncio.Queue()
        cancelled: set[str] = set()
        current: list[str] = []

        async def work() -> None:
            while (request := await inbox.get()) is not None:
                rid, rate = request.request_id, request.sample_rate
                await ws.send_text(protocol.synthesis_start(rid, rate))
                if rid in cancelled:
                    size = -1 if self.bad_bytes else 0
                    await ws.send_text(protocol.synthesis_complete(rid, size, rate, cancelled=True))
                    continue
                current[:] = [rid]
                total = 0
                async for chunk in self.synth.stream(request):
                    if rid in cancelled:
                        break
                    await ws.send_bytes(chunk)
                    total += len(chunk)
                await ws.send_text(protocol.synthesis_complete(rid, total, rate, cancelled=rid in cancelled))
                current.clear()

        worker = asyncio.create_task(work())
        queued: list[str] = []
        try:
            async for message in self.requests(ws):
                if isinstance(message, protocol.CloseRequest):
                    await inbox.put(None)
                    await worker
                    await ws.close(1000)
                    return
                if isinstance(message, protocol.CancelRequest):
                    cancelled.update(current + queued)
                    queued.clear()
                    continue
                queued.append(message.request_id)
                await inbox.put(message)
        except WebSocketDisconnect:
            pass
        finally:
            worker.cancel()


class TakesMessagesAfterCloseToy(ToyContainer):
    """On {"type": "close"}, still synthesizes the messages that arrive after it, then closes."""

    async def on_close_request(self, ws: WebSocket) -> None:
        while True:
            try:
                message = await asyncio.wait_for(ws.receive(), timeout=0.3)
            except TimeoutError:
                break
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text") if message.get("text") is not None else message.get("bytes") or b""
            parsed = self.parse(data)
            if isinstance(parsed, protocol.SynthesizeRequest):
                await self.synthesize(ws, parsed)
        await ws.close(1000)


class PostPcmWithWavHeaderToy(ToyContainer):
    """POST /invocations puts a WAV header in front of the raw PCM as well (a `fmt is not "wav"` slip)."""

    async def invocations(self, request: Request) -> Response:
        response = await super().invocations(request)
        if response.media_type != "audio/pcm":
            return response
        body = b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[union-attr,misc]
        return Response(wav_header(protocol.DEFAULT_SAMPLE_RATE) + body, media_type="audio/pcm")


class LoadingPingToy(ToyContainer):
    """/ping answers `while_loading` for the model's first `load_s` seconds, then 200. With 500 it is the
    mutant of http_routes.py's ping (500 instead of 503 while loading); with 503 it is right."""

    def __init__(self, while_loading: int = 500, load_s: float = 0.8) -> None:
        super().__init__()
        self.while_loading = while_loading
        self.load_s = load_s
        self.started = time.monotonic()

    async def ping(self, request: Request) -> Response:
        if time.monotonic() - self.started < self.load_s:
            return JSONResponse({"status": "loading"}, status_code=self.while_loading)
        return Response(status_code=200)
