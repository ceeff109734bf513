"""The relay's Starlette app: the listen page, and the two shapes agents relay audio in.

- ``WS /ws``: one upstream session per page connection. The page sends each turn as a TEXT frame
  (JSON, see :class:`~loadtest.relay.turns.TurnRequest`); the relay answers with TEXT frames
  ``{"type": "start", "sample_rate"}``, raw s16le PCM in BINARY frames as it arrives, then
  ``{"type": "done", "relay": {...}}`` or ``{"type": "error", "code", "message", "relay"}``.
- ``POST /sse``: one turn per request (JSON body with a ``session`` id to reuse an upstream session
  across turns, as an agent keeps one per conversation); the answer is ``text/event-stream`` with
  ``event: start`` (JSON), ``event: audio`` (base64 PCM, :func:`bidi_tts.sse.encode_event`), and
  ``event: done`` or ``event: error`` (JSON, as above). ``POST /sse/close`` ends a session.

The ``relay`` object is :meth:`~loadtest.relay.turns.Turn.timing_ms`: the relay's own clock readings.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts.sse import encode_event
from bidi_tts.transports.base import ConnectError
from bidi_tts_loadtest.relay.turns import (
    BadTurn,
    RelaySession,
    Turn,
    TurnAudio,
    TurnDone,
    TurnFailed,
    TurnRequest,
    TurnStarted,
)
from bidi_tts_loadtest.relay.upstream import Upstream

STATIC = Path(__file__).with_name("static")
MAX_SSE_SESSIONS = 32
SSE_IDLE_S = 300.0


def _control(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, **fields})


class Relay:
    """Holds the upstream and the SSE shape's sessions (keyed by the page's session id)."""

    def __init__(self, upstream: Upstream, *, message_timeout_s: float = 30.0) -> None:
        self.upstream = upstream
        self.message_timeout_s = message_timeout_s
        self.sse_sessions: dict[str, RelaySession] = {}

    async def open_session(self) -> tuple[RelaySession, float]:
        transport, connect_s = await self.upstream.open()
        return RelaySession(transport, message_timeout_s=self.message_timeout_s), connect_s

    async def close_all(self) -> None:
        sessions, self.sse_sessions = list(self.sse_sessions.values()), {}
        for session in sessions:
            await session.close()

    # -- the page -------------------------------------------------------------------------------
    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def favicon(self, request: Request) -> Response:
        return Response(status_code=204)

    async def config(self, request: Request) -> Response:
        return JSONResponse({"upstream": self.upstream.describe()})

    # -- binary WebSocket shape -------------------------------------------------------------------
    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            relay_session, _ = await self.open_session()
        except ConnectError as exc:
            await ws.send_text(_control("error", code="upstream_unreachable", message=str(exc), relay=None))
            await ws.close(1011, "upstream unreachable")
            return
        try:
            while True:
                text = await ws.receive_text()
                turn_at = time.perf_counter()
                try:
                    request = TurnRequest.from_json(json.loads(text))
                except (ValueError, BadTurn) as exc:
                    message = str(exc) if isinstance(exc, BadTurn) else "a turn is a JSON object"
                    await ws.send_text(_control("error", code="bad_turn", message=message, relay=None))
                    continue
                turn = Turn(request, turn_at)
                async with contextlib.aclosing(relay_session.run(turn)) as events:
                    async for event in events:
                        match event:
                            case TurnStarted(sample_rate=rate):
                                await ws.send_text(_control("start", sample_rate=rate))
                            case TurnAudio(pcm=pcm):
                                await ws.send_bytes(pcm)
                                turn.forwarded()
                            case TurnDone():
                                await ws.send_text(_control("done", relay=turn.timing_ms()))
                            case TurnFailed(code=code, message=message):
                                await ws.send_text(_control("error", code=code, message=message,
                                                            relay=turn.timing_ms()))
                if relay_session.broken:
                    await ws.close(1011, "upstream session ended")
                    return
        except WebSocketDisconnect:
            pass
        finally:
            await relay_session.close()

    # -- SSE / base64 shape -----------------------------------------------------------------------
    async def sse(self, request: Request) -> Response:
        received_at = time.perf_counter()
        try:
            body = json.loads(await request.body())
            turn_request = TurnRequest.from_json(body)
        except (ValueError, BadTurn) as exc:
            message = str(exc) if isinstance(exc, BadTurn) else "the body is not JSON"
            return JSONResponse({"code": "bad_turn", "message": message}, status_code=400)
        session_id = body.get("session")
        if session_id is not None and (not isinstance(session_id, str) or not 0 < len(session_id) <= 100):
            return JSONResponse({"code": "bad_turn", "message": "session must be a short string"}, status_code=400)
        await self._expire_idle()
        relay_session = self.sse_sessions.get(session_id) if session_id else None
        connect_s = 0.0
        if relay_session is None:
            if len(self.sse_sessions) >= MAX_SSE_SESSIONS:
                return JSONResponse({"code": "busy", "message": "too many relay sessions"}, status_code=503)
            try:
                relay_session, connect_s = await self.open_session()
            except ConnectError as exc:
                return JSONResponse({"code": "upstream_unreachable", "message": str(exc)}, status_code=502)
            if session_id:
                self.sse_sessions[session_id] = relay_session
        turn = Turn(turn_request, received_at, connect_s=connect_s)
        return StreamingResponse(self._sse_events(relay_session, turn, session_id), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def _sse_events(
        self, relay_session: RelaySession, turn: Turn, session_id: str | None
    ) -> AsyncIterator[bytes]:
        async with relay_session.lock:
            finished = False
            try:
                async with contextlib.aclosing(relay_session.run(turn)) as events:
                    async for event in events:
                        match event:
                            case TurnStarted(sample_rate=rate):
                                yield encode_event(_control("start", sample_rate=rate), event="start")
                            case TurnAudio(pcm=pcm):
                                yield encode_event(pcm, event="audio")
                                turn.forwarded()  # Starlette sent the chunk before asking for the next
                            case TurnDone():
                                yield encode_event(_control("done", relay=turn.timing_ms()), event="done")
                            case TurnFailed(code=code, message=message):
                                yield encode_event(_control("error", code=code, message=message,
                                                            relay=turn.timing_ms()), event="error")
                finished = True
            finally:
                if not finished:  # the page went away mid-turn: the rest of it would reach the next turn
                    relay_session.broken = True
                if relay_session.broken or session_id is None:
                    if session_id is not None:
                        self.sse_sessions.pop(session_id, None)
                    await relay_session.close()

    async def sse_close(self, request: Request) -> Response:
        with contextlib.suppress(ValueError, AttributeError):
            session = self.sse_sessions.pop(json.loads(await request.body()).get("session"), None)
            if session is not None:
                await session.close()
        return Response(status_code=204)

    async def _expire_idle(self) -> None:
        now = time.monotonic()
        for key, session in list(self.sse_sessions.items()):
            if now - session.last_used > SSE_IDLE_S and not session.lock.locked():
                del self.sse_sessions[key]
                await session.close()

    # -- the app --------------------------------------------------------------------------------
    def app(self) -> Starlette:
        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            yield
            await self.close_all()

        return Starlette(
            routes=[
                Route("/", self.index),
                Route("/config", self.config),
                Route("/favicon.ico", self.favicon),
                WebSocketRoute("/ws", self.websocket),
                Route("/sse", self.sse, methods=["POST"]),
                Route("/sse/close", self.sse_close, methods=["POST"]),
                Mount("/static", StaticFiles(directory=STATIC), name="static"),
            ],
            lifespan=lifespan,
        )
