"""Toys with room for a few messages at once (WebSocket and POST together): past it a message is refused
`busy` at admission, as the reference container's scheduler does. `RoomToy` is correct; each other breaks
one thing a mutant of the reference container broke and no case noticed (issue 44)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.websockets import WebSocket

from bidi_tts import protocol
from tests.toys.good import ToyConfig, ToyContainer

ROOM = 3
BUSY_MESSAGE = protocol.ERROR_MESSAGES[protocol.ErrorCode.BUSY]


class RoomToy(ToyContainer):
    """At most ROOM messages at once; a message past that is refused busy (its request_id echoed), a POST
    503 {"code": "busy", "message"}. Paced (a long message takes seconds), so that messages overlap."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(realtime_factor=0.2))
        self.active = 0

    def busy_frame(self, request: protocol.SynthesizeRequest) -> str:
        return protocol.error_frame(protocol.ErrorCode.BUSY, request_id=request.request_id)

    def busy_body(self) -> dict[str, str]:
        return {"code": "busy", "message": BUSY_MESSAGE}

    def release_post(self) -> None:
        self.active -= 1

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        if self.active >= ROOM:
            await ws.send_text(self.busy_frame(request))
            return
        self.active += 1
        try:
            await super().synthesize(ws, request)
        finally:
            self.active -= 1

    async def invocations(self, request: Request) -> Response:
        try:
            parsed = self.parse(await request.body())
        except protocol.ProtocolError as exc:
            return JSONResponse({"code": exc.code.value, "message": exc.message}, status_code=400)
        if not isinstance(parsed, protocol.SynthesizeRequest):
            return JSONResponse({"code": "unknown_type", "message": "POST takes a synthesize message."}, 400)
        if self.active >= ROOM:
            return JSONResponse(self.busy_body(), status_code=503)
        self.active += 1

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in self.synth.stream(parsed):
                    yield chunk
            finally:
                self.release_post()

        return StreamingResponse(body(), media_type="audio/pcm")


class BusyWithoutIdToy(RoomToy):
    """The busy frame at admission is sent without the refused message's request_id."""

    def busy_frame(self, request: protocol.SynthesizeRequest) -> str:
        return protocol.error_frame(protocol.ErrorCode.BUSY, request_id=None)


class LeakyPostToy(RoomToy):
    """A POST never gives its place back: after ROOM of them every request is refused busy."""

    def release_post(self) -> None:
        pass


class BusyPostWithoutMessageToy(RoomToy):
    """A busy POST is answered 503 {"code": "busy"}, with no message."""

    def busy_body(self) -> dict[str, str]:
        return {"code": "busy"}
