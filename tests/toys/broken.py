"""Deliberately broken toy containers, each breaking ONE clause of CONTRACT.md.

The suite's self-tests (tests/conformance_suite) run the conformance cases against each and assert
that the right case ids come out FAILED (or NON-STRICT for optional clauses).
"""

from __future__ import annotations

import asyncio
import base64
import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket

from bidi_tts import protocol
from tests.toys.good import ToyConfig, ToyContainer


class TextOnlyToy(ToyContainer):
    """The receive_text() bug of the public sample: a BINARY frame raises KeyError('text')."""

    async def receive_message(self, ws: WebSocket) -> bytes | str | None:
        return await ws.receive_text()


class CloseAfterFirstToy(ToyContainer):
    """Closes the session (1000) after the first message instead of taking the next one."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await super().synthesize(ws, request)
        await ws.close(1000)


class NoCompleteToy(ToyContainer):
    """Never sends synthesis_complete."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        async for chunk in self.synth.stream(request):
            await ws.send_bytes(chunk)


class IgnoreCloseToy(ToyContainer):
    """Ignores {"type": "close"}: keeps the session open until the client leaves."""

    async def on_close_request(self, ws: WebSocket) -> None:
        while (await ws.receive())["type"] != "websocket.disconnect":
            pass


class WrongCloseCodeToy(ToyContainer):
    """Answers {"type": "close"} with close code 1011 instead of 1000."""

    async def on_close_request(self, ws: WebSocket) -> None:
        await ws.close(1011)


class NoStreamToy(ToyContainer):
    """Synthesizes the whole message, then sends all audio at the end (no TTS-STREAM)."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(first_audio_delay_s=0.3))

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        chunks = [chunk async for chunk in self.synth.stream(request)]
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        for chunk in chunks:
            await ws.send_bytes(chunk)
        total = sum(map(len, chunks))
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class StreamingToy(ToyContainer):
    """A correct toy with the same per-sentence latency as NoStreamToy (the control group)."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(first_audio_delay_s=0.3))


class Base64AudioToy(ToyContainer):
    """Sends audio as base64 inside JSON TEXT frames (like an SSE API), not as BINARY PCM."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        async for chunk in self.synth.stream(request):
            await ws.send_text(json.dumps({"type": "audio", "data": base64.b64encode(chunk).decode()}))
            total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class OddFramesToy(ToyContainer):
    """Splits the audio into odd-length frames (half samples across frames)."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        pcm = b"".join([chunk async for chunk in self.synth.stream(request)])
        for offset in range(0, len(pcm), 4801):
            await ws.send_bytes(pcm[offset : offset + 4801])
        await ws.send_text(protocol.synthesis_complete(request.request_id, len(pcm), request.sample_rate))


class SilentToy(ToyContainer):
    """Streams silence of the right length."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        async for chunk in self.synth.stream(request):
            await ws.send_bytes(bytes(len(chunk)))
            total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class WrongTotalsToy(ToyContainer):
    """synthesis_complete reports twice the audio bytes that were sent."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        async for chunk in self.synth.stream(request):
            await ws.send_bytes(chunk)
            total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, 2 * total, request.sample_rate))


class _ErrorRewriter(ToyContainer):
    """Rewrites every error frame the good toy would send (subclasses say how)."""

    def rewrite(self, frame: dict[str, object]) -> dict[str, object]:
        return frame

    async def websocket(self, ws: WebSocket) -> None:
        send_text = ws.send_text

        async def patched(data: str) -> None:
            obj = json.loads(data)
            if obj.get("type") == "error":
                data = json.dumps(self.rewrite(obj))
            await send_text(data)

        ws.send_text = patched  # type: ignore[method-assign]
        await super().websocket(ws)


class LeakyErrorsToy(_ErrorRewriter):
    """Puts str(exception) in error messages: the KeyError('text') of a missing field -> "'text'"."""

    def rewrite(self, frame: dict[str, object]) -> dict[str, object]:
        return {**frame, "message": str(KeyError("text"))}


class MissingCodeToy(_ErrorRewriter):
    """Error frames without a code."""

    def rewrite(self, frame: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in frame.items() if k != "code"}


class WrongCodeToy(_ErrorRewriter):
    """Every error carries the code 'internal' (not the stable code of the cause)."""

    def rewrite(self, frame: dict[str, object]) -> dict[str, object]:
        return {**frame, "code": "internal"}


class CloseOnBadInputToy(ToyContainer):
    """Closes the session with 1011 on any bad input instead of answering with an error frame."""

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        while (data := await self.receive_message(ws)) is not None:
            try:
                message = protocol.parse_client_message(data, self.limits)
            except protocol.ProtocolError:
                await ws.close(1011)
                return
            if isinstance(message, protocol.CloseRequest):
                await ws.close(1000)
                return
            if isinstance(message, protocol.SynthesizeRequest):
                await self.synthesize(ws, message)


class AcceptAnyVoiceToy(ToyContainer):
    """No voice allow-list: any voice name, a path included, is synthesized."""

    def __init__(self) -> None:
        super().__init__()
        self.limits = protocol.Limits(voices=None)

    async def websocket(self, ws: WebSocket) -> None:
        receive = self.receive_message

        async def loose(w: WebSocket) -> bytes | str | None:
            data = await receive(w)
            if data is None:
                return None
            try:
                obj = json.loads(data)
                if isinstance(obj, dict) and "voice" in obj:
                    obj["voice"] = "af_heart"
                    return json.dumps(obj)
            except (ValueError, UnicodeDecodeError):
                pass
            return data

        self.receive_message = loose  # type: ignore[method-assign,assignment]
        await super().websocket(ws)


class PingNeverReadyToy(ToyContainer):
    """/ping always answers 503."""

    async def ping(self, request: Request) -> Response:
        return Response(status_code=503)


class SlowAcceptToy(ToyContainer):
    """Takes 0.6 s to accept a WebSocket connection."""

    async def websocket(self, ws: WebSocket) -> None:
        await asyncio.sleep(0.6)
        await super().websocket(ws)


class PostErrors500Toy(ToyContainer):
    """POST /invocations answers bad input with 500 and a bare exception string."""

    async def invocations(self, request: Request) -> Response:
        try:
            protocol.parse_client_message(await request.body(), self.limits)
        except protocol.ProtocolError:
            return JSONResponse({"error": "'text'"}, status_code=500)
        return await super().invocations(request)
