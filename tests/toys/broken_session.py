"""Toy containers whose sessions, closes, cancels, neighbours, /ping or POST go wrong, each breaking
ONE clause."""

from __future__ import annotations

import asyncio
import json
import struct
import time
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from tests.toys.good import ToyConfig, ToyContainer, tone, wav_header


class _Concurrent(ToyContainer):
    """Reads the next message while synthesizing (as a real container must, to see close/cancel).

    Messages are synthesized one after the other, each in its own task; subclasses change what a
    close or cancel does, or let the tasks overlap.
    """

    overlap = False

    async def on_close(self, ws: WebSocket, work: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*work, return_exceptions=True)
        await ws.close(protocol.CloseCode.NORMAL)

    async def on_cancel(self, ws: WebSocket, work: list[asyncio.Task[None]]) -> None:
        """Ignore it (cancel is optional)."""

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        work: list[asyncio.Task[None]] = []
        try:
            async for message in self.requests(ws):
                if isinstance(message, protocol.CloseRequest):
                    await self.on_close(ws, work)
                    return
                if isinstance(message, protocol.CancelRequest):
                    await self.on_cancel(ws, work)
                    continue
                previous = None if self.overlap or not work else work[-1]
                work.append(asyncio.create_task(self._after(previous, ws, message)))
        except WebSocketDisconnect:
            pass
        finally:
            for task in work:
                task.cancel()

    async def _after(self, previous: asyncio.Task[None] | None, ws: WebSocket,
                     message: protocol.SynthesizeRequest) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        await self.synthesize(ws, message)


class CloseAfterMessagesToy(ToyContainer):
    """Ends every session (close 1000) after `limit` messages."""

    def __init__(self, limit: int = 10) -> None:
        super().__init__()
        self.limit = limit
        self.done: dict[int, int] = {}  # messages synthesized, per session (id of its WebSocket)

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await super().synthesize(ws, request)
        self.done[id(ws)] = self.done.get(id(ws), 0) + 1
        if self.done[id(ws)] >= self.limit:
            await ws.close(protocol.CloseCode.NORMAL)
            raise WebSocketDisconnect(protocol.CloseCode.NORMAL)


class LifoToy(ToyContainer):
    """Keeps a session's waiting messages on a stack: pipelined messages are answered newest first."""

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        stack: list[protocol.SynthesizeRequest] = []
        arrived = asyncio.Event()

        async def work() -> None:
            while True:
                await arrived.wait()
                await asyncio.sleep(0.2)  # gathers a batch of messages
                while stack:
                    await self.synthesize(ws, stack.pop())
                arrived.clear()

        worker = asyncio.create_task(work())
        try:
            while (data := await self.receive_message(ws)) is not None:
                try:
                    message = self.parse(data)
                except protocol.ProtocolError as exc:
                    await ws.send_text(protocol.error_from(exc))
                    continue
                if isinstance(message, protocol.CloseRequest):
                    await ws.close(protocol.CloseCode.NORMAL)
                    return
                if isinstance(message, protocol.SynthesizeRequest):
                    stack.append(message)
                    arrived.set()
        except WebSocketDisconnect:
            pass
        finally:
            worker.cancel()


class SharedTextToy(ToyContainer):
    """Keeps the text to synthesize in one attribute for all sessions: concurrent sessions all get
    the audio of the latest message (consistent frames, wrong content)."""

    def __init__(self) -> None:
        super().__init__()
        self.text = ""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        self.text = request.text
        await asyncio.sleep(0.3)  # the model loads the voice; other sessions' messages arrive
        await super().synthesize(ws, protocol.SynthesizeRequest(self.text, request.voice, request.speed,
                                                                request.sample_rate, request.request_id))


class InterleavingToy(_Concurrent):
    """Synthesizes every message of a session at once: frames of pipelined messages interleave."""

    overlap = True

    def __init__(self) -> None:
        super().__init__(ToyConfig(realtime_factor=0.1))


class ErrorThenBrokenToy(ToyContainer):
    """After answering one bad message with its error frame, the session ignores every message."""

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            while (data := await self.receive_message(ws)) is not None:
                try:
                    message = self.parse(data)
                except protocol.ProtocolError as exc:
                    await ws.send_text(protocol.error_from(exc))
                    while await self.receive_message(ws) is not None:
                        pass  # stuck: a handler task died after the error
                    return
                if isinstance(message, protocol.CloseRequest):
                    await ws.close(protocol.CloseCode.NORMAL)
                    return
                if isinstance(message, protocol.SynthesizeRequest):
                    await self.synthesize(ws, message)
        except WebSocketDisconnect:
            return


class IdleTimeoutToy(ToyContainer):
    """Closes a session (1001) after 1.5 s without a message."""

    async def receive_message(self, ws: WebSocket) -> bytes | str | None:
        try:
            return await asyncio.wait_for(super().receive_message(ws), timeout=1.5)
        except TimeoutError:
            await ws.close(protocol.CloseCode.GOING_AWAY, reason="idle timeout")
            return None


class TextCloseOnlyToy(ToyContainer):
    """Honours {"type": "close"} only in a TEXT frame; in a BINARY frame it is taken as text to
    synthesize and refused with text_required."""

    async def receive_message(self, ws: WebSocket) -> bytes | str | None:
        data = await super().receive_message(ws)
        if isinstance(data, bytes) and b'"close"' in data:
            return b'{"text": ""}'
        return data


class AbandonOnCloseToy(_Concurrent):
    """On {"type": "close"} closes at once (1000), dropping the message in progress."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(realtime_factor=0.3))

    async def on_close(self, ws: WebSocket, work: list[asyncio.Task[None]]) -> None:
        for task in work:
            task.cancel()
        await ws.close(protocol.CloseCode.NORMAL)


class BrokenAfterDisconnectToy(ToyContainer):
    """One model behind a lock; a client that leaves mid-message kills the model: every later
    message is answered 'internal'."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(realtime_factor=0.2))
        self.model = asyncio.Lock()
        self.dead = False

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        async with self.model:
            if self.dead:
                await ws.send_text(protocol.error_from(protocol.ProtocolError(
                    protocol.ErrorCode.INTERNAL, "The model worker has died.", request_id=request.request_id)))
                return
            try:
                await super().synthesize(ws, request)
            except Exception:
                self.dead = True
                raise


class CancelClosesToy(_Concurrent):
    """Treats {"type": "cancel"} like a close: stops and closes the session (1000)."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(realtime_factor=0.1))

    async def on_cancel(self, ws: WebSocket, work: list[asyncio.Task[None]]) -> None:
        for task in work:
            task.cancel()
        await ws.close(protocol.CloseCode.NORMAL)


class OverloadCodeToy(ToyContainer):
    """Sheds load, but with home-made codes: 'overloaded' beyond 4 sessions, 'rate_limited' beyond
    10 messages a second in one session (the contract's code is 'busy')."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions = 0
        self.arrivals: dict[int, list[float]] = {}  # message times, per session (id of its WebSocket)

    async def websocket(self, ws: WebSocket) -> None:
        self.sessions += 1
        try:
            await asyncio.sleep(0.05)  # let concurrent sessions arrive before the first message
            await super().websocket(ws)
        finally:
            self.sessions -= 1
            self.arrivals.pop(id(ws), None)

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        now = time.monotonic()
        times = self.arrivals.setdefault(id(ws), [])
        times.append(now)
        recent = [t for t in times if now - t < 1.0]
        code = "overloaded" if self.sessions > 4 else "rate_limited" if len(recent) > 10 else None
        if code is None:
            await super().synthesize(ws, request)
            return
        await ws.send_text(json.dumps({"type": "error", "request_id": request.request_id, "code": code,
                                       "message": "Too much work right now; retry later."}))


class ErrorBudgetToy(ToyContainer):
    """Closes a session with 1008 (policy) after its 8th bad message."""

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        errors = 0
        try:
            while (data := await self.receive_message(ws)) is not None:
                try:
                    message = self.parse(data)
                except protocol.ProtocolError as exc:
                    errors += 1
                    if errors >= 8:
                        await ws.close(protocol.CloseCode.POLICY_VIOLATION, reason="too many bad messages")
                        return
                    await ws.send_text(protocol.error_from(exc))
                    continue
                if isinstance(message, protocol.CloseRequest):
                    await ws.close(protocol.CloseCode.NORMAL)
                    return
                if isinstance(message, protocol.SynthesizeRequest):
                    await self.synthesize(ws, message)
        except WebSocketDisconnect:
            return


class GarbageKillsPingToy(ToyContainer):
    """Invalid UTF-8 from any session puts the whole container in a failed state: /ping answers 500."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        try:
            return super().parse(data)
        except protocol.ProtocolError as exc:
            if exc.code is protocol.ErrorCode.INVALID_UTF8:
                self.failed = True
            raise

    async def ping(self, request: Request) -> Response:
        return Response(status_code=500 if self.failed else 200)


_CHUNK = tone(0.1, protocol.DEFAULT_SAMPLE_RATE)


class StallingWorkerToy(ToyContainer):
    """One synthesis worker for all sessions that blocks while a client does not read: 2 s of audio
    per character (MBs per message, more than the socket buffers hold) sent under a global lock."""

    def __init__(self) -> None:
        super().__init__()
        self.worker = asyncio.Lock()

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        async with self.worker:
            await ws.send_text(protocol.synthesis_start(request.request_id, protocol.DEFAULT_SAMPLE_RATE))
            chunks = 20 * len(request.text)
            for _ in range(chunks):
                await ws.send_bytes(_CHUNK)
            await ws.send_text(protocol.synthesis_complete(request.request_id, chunks * len(_CHUNK),
                                                           protocol.DEFAULT_SAMPLE_RATE))


class SlowPingToy(ToyContainer):
    """/ping takes 2.3 s (it runs a test synthesis every time)."""

    async def ping(self, request: Request) -> Response:
        await asyncio.sleep(2.3)
        return Response(status_code=200)


class PathHeaderRejectedToy(ToyContainer):
    """Refuses the handshake (HTTP 403) when SageMaker's invocation-path header is present."""

    async def websocket(self, ws: WebSocket) -> None:
        if protocol.INVOCATION_PATH_HEADER.lower() in ws.headers:
            await ws.close(code=1008)
            return
        await super().websocket(ws)


class PingWaitsForModelToy(ToyContainer):
    """/ping asks the model, which is busy for a whole message: /ping waits for the synthesis to end."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(realtime_factor=2.0))
        self.model = asyncio.Lock()

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        async with self.model:
            await super().synthesize(ws, request)

    async def ping(self, request: Request) -> Response:
        async with self.model:
            return Response(status_code=200)


class PostOctetStreamToy(ToyContainer):
    """POST /invocations streams the PCM as application/octet-stream, not audio/pcm."""

    async def invocations(self, request: Request) -> Response:
        response = await super().invocations(request)
        if response.media_type == "audio/pcm":
            response.headers["content-type"] = "application/octet-stream"
        return response


class PostSizedWavToy(ToyContainer):
    """POST /invocations (wav) writes zero RIFF/data sizes instead of 0xFFFFFFFF."""

    async def invocations(self, request: Request) -> Response:
        response = await super().invocations(request)
        if response.media_type != "audio/wav" or not isinstance(response, StreamingResponse):
            return response
        body = response.body_iterator

        async def zero_sizes() -> AsyncIterator[bytes]:
            first = True
            async for chunk in body:
                if first and isinstance(chunk, bytes) and chunk.startswith(b"RIFF"):
                    header = bytearray(wav_header(protocol.DEFAULT_SAMPLE_RATE))
                    struct.pack_into("<I", header, 4, 0)
                    struct.pack_into("<I", header, 40, 0)
                    chunk = bytes(header) + chunk[len(header):]
                first = False
                yield chunk  # type: ignore[misc]

        return StreamingResponse(zero_sizes(), media_type="audio/wav")


class PostBufferedToy(ToyContainer):
    """POST /invocations synthesizes the whole text, then sends it (no streaming)."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(first_audio_delay_s=0.1))

    async def invocations(self, request: Request) -> Response:
        response = await super().invocations(request)
        if not isinstance(response, StreamingResponse):
            return response
        chunks = [chunk async for chunk in response.body_iterator]
        return Response(b"".join(c if isinstance(c, bytes) else c.encode() for c in chunks),
                        media_type=response.media_type)


class GlobalLockToy(ToyContainer):
    """The AWS post's sample shape: every session's synthesis behind one global lock, so a short
    message in one session waits for another session's whole paragraph (head-of-line blocking)."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(first_audio_delay_s=0.2))
        self.model = asyncio.Lock()

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        async with self.model:
            await super().synthesize(ws, request)
