"""One bidirectional-streaming WebSocket session (CONTRACT.md section 1).

Two tasks per session: a *reader* that takes every frame off the socket at once (raw
`websocket.receive()`, so TEXT and BINARY frames are treated alike: SageMaker sends BINARY), and a
*processor* that handles messages strictly in order (TTS-ORDER). Because the reader runs while the
processor synthesizes, `cancel`, `close` and a client disconnect are seen mid-message. Parse errors
are queued in order with the messages, so an error frame never lands inside another message's audio.
The session's state (idle, streaming, closing, closed: the client's states) moves by the table of
:mod:`reference_container.session_state`; an illegal move raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from reference_container.drain import GOING_AWAY_REASON
from reference_container.logs import kv
from reference_container.scheduler import Busy, JobCancelled, JobFailed
from reference_container.session_state import ServerMove, ServerSessionState
from reference_container.state import AppState
from reference_container.streaming import MessageStats, message_audio
from reference_container.transport_abort import ABORT_KEY

log = logging.getLogger(__name__)

_session_ids = itertools.count(1)
MAX_INBOX = 1024  # messages received but not yet handled; past this the client is flooding


@dataclass(eq=False)
class _Item:
    """One received message waiting for the processor."""

    request: protocol.SynthesizeRequest | None = None
    error: protocol.ProtocolError | None = None
    close: bool = False
    close_code: int = protocol.CloseCode.NORMAL
    close_reason: str = ""
    cancelled: bool = False


class _SendFailed(Exception):
    """The peer is gone; stop working for it."""


class WsSession:
    """Serves one WebSocket connection until close, disconnect or a fatal error."""

    def __init__(self, ws: WebSocket, state: AppState) -> None:
        self.ws = ws
        self.state = state
        self.id = f"ws-{next(_session_ids)}"
        self._inbox: deque[_Item] = deque()
        self._wakeup = asyncio.Event()
        self._current: _Item | None = None
        self.states = ServerSessionState()
        self._messages = 0
        self._opened = time.perf_counter()

    async def run(self) -> None:
        """Accept, then read and process concurrently until the session ends."""
        await self.ws.accept()
        log.info(kv(event="session_open", session=self.id))
        self.state.drain.register(self)
        reader = asyncio.create_task(self._read_loop(), name=f"{self.id}-reader")
        processor = asyncio.create_task(self._process_loop(), name=f"{self.id}-processor")
        try:
            # The reader ends only on disconnect; the processor on close, a fatal error or a lost peer.
            done, pending = await asyncio.wait({reader, processor}, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for task in done:
                task.result()
        except Exception:
            log.exception(kv(event="session_failed", session=self.id))
            await self._close(protocol.CloseCode.INTERNAL_ERROR)
        finally:
            reader.cancel()
            processor.cancel()
            self.state.scheduler.cancel_session(self.id)
            self.state.drain.unregister(self)
            log.info(kv(event="session_end", session=self.id, messages=self._messages,
                        gone=self.states.peer_gone, duration_s=time.perf_counter() - self._opened))

    # -- stopping (reference_container.shutdown) -------------------------------------------------
    def drain(self) -> None:
        """The container is stopping: finish the current message, drop the ones waiting, close 1001."""
        if not self.states.taking_messages:
            return  # a close is under way already (the client's: it ends with 1000)
        self.states.move(ServerMove.RECEIVE_CLOSE)
        self._inbox.clear()
        self._push(_Item(close=True, close_code=protocol.CloseCode.GOING_AWAY, close_reason=GOING_AWAY_REASON))

    def stop_now(self) -> None:
        """The drain deadline: stop the current message (synthesis_complete says cancelled), then close."""
        self._cancel_all()

    # -- reading --------------------------------------------------------------------------------
    def _push(self, item: _Item) -> None:
        self._inbox.append(item)
        self._wakeup.set()

    async def _read_loop(self) -> None:
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                self.states.move(ServerMove.GONE)
                self._cancel_all()
                self._wakeup.set()
                return
            data: bytes | str | None = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            if not self.states.taking_messages:
                continue  # after `close`, nothing new is taken
            try:
                parsed = protocol.parse_client_message(data, self.state.limits)
            except protocol.ProtocolError as exc:
                self._push(_Item(error=exc))  # answered in order; fatal ones close after the frame
                continue
            if isinstance(parsed, protocol.CloseRequest):
                self.states.move(ServerMove.RECEIVE_CLOSE)
                self._push(_Item(close=True))
            elif isinstance(parsed, protocol.CancelRequest):
                self._cancel_all()
            else:
                if len(self._inbox) >= MAX_INBOX:
                    self._push(_Item(error=protocol.ProtocolError(
                        protocol.ErrorCode.BUSY, "Too many messages are waiting in this session.",
                        request_id=parsed.request_id)))
                    continue
                self._push(_Item(request=parsed))

    def _cancel_all(self) -> None:
        """`cancel`: the current message and every message received before it stop."""
        for item in self._inbox:
            item.cancelled = True
        if self._current is not None:
            self._current.cancelled = True
        self.state.scheduler.cancel_session(self.id)

    # -- processing -----------------------------------------------------------------------------
    async def _process_loop(self) -> None:
        try:
            await self._process_items()
        except _SendFailed:
            self.states.move(ServerMove.GONE)

    async def _process_items(self) -> None:
        while True:
            while not self._inbox:
                if self.states.closed:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
            item = self._inbox.popleft()
            if self.states.closed:
                return
            if item.close:
                await self._close(item.close_code, item.close_reason)
                return
            if item.error is not None:
                await self._send_text(protocol.error_from(item.error))
                if item.error.close_code is not None:
                    await self._close(item.error.close_code)
                    return
                continue
            assert item.request is not None
            self._current = item
            self.states.move(ServerMove.START)
            try:
                await self._synthesize(item, item.request)
            finally:
                self._current = None
                self.states.move(ServerMove.END)
                self.state.scheduler.cancel_session(self.id)  # leftovers of a stopped message

    async def _synthesize(self, item: _Item, request: protocol.SynthesizeRequest) -> None:
        self._messages += 1
        stats = MessageStats(self.id, request.request_id)
        rate = request.sample_rate
        if not self.state.ready.is_set():
            await self.state.ready.wait()
        if item.cancelled:
            await self._send_text(protocol.synthesis_start(request.request_id, rate))
            await self._send_text(protocol.synthesis_complete(request.request_id, 0, rate, cancelled=True))
            stats.log("cancelled")
            return
        try:
            ticket = self.state.scheduler.admit()
        except Busy:
            await self._send_text(
                protocol.error_frame(protocol.ErrorCode.BUSY, request_id=request.request_id)
            )
            stats.log("busy")
            return
        outcome = "complete"
        with ticket:
            await self._send_text(protocol.synthesis_start(request.request_id, rate))
            try:
                if item.cancelled:
                    raise JobCancelled
                async for frame in message_audio(
                    self.state.scheduler, request, stats, model_rate=self.state.synth.sample_rate,
                    first_clause_chars=self.state.settings.first_clause_chars,
                    cost=self.state.cost,
                ):
                    if item.cancelled:
                        raise JobCancelled
                    await self._send_bytes(frame)
                    if stats.first_audio_at is None:
                        stats.first_audio_at = time.perf_counter()
                    stats.audio_bytes += len(frame)
            except JobCancelled:
                outcome = "cancelled"
            except JobFailed:
                stats.log("internal")
                await self._send_text(protocol.error_frame(
                    protocol.ErrorCode.INTERNAL, request_id=request.request_id))
                return
        await self._send_text(protocol.synthesis_complete(
            request.request_id, stats.audio_bytes, rate, cancelled=outcome == "cancelled"))
        stats.log(outcome)

    # -- sending --------------------------------------------------------------------------------
    # A send waits while the client does not read (the transport's write buffer is full). Without a
    # bound, a client that holds its connection open and never reads would keep its session, and its
    # admission slot in the scheduler, forever: so a send that waits longer than the send timeout
    # ends the session as if the peer were gone.
    async def _send_text(self, text: str) -> None:
        await self._send(self.ws.send_text(text))

    async def _send_bytes(self, data: bytes) -> None:
        await self._send(self.ws.send_bytes(data))

    async def _send(self, sending: Coroutine[Any, Any, None]) -> None:
        try:
            async with asyncio.timeout(self.state.settings.send_timeout_s):
                await sending
        except TimeoutError as exc:
            log.warning(kv(event="send_timeout", session=self.id,
                           timeout_s=self.state.settings.send_timeout_s))
            # A graceful close would wait behind the unread bytes too: reset the connection.
            abort = self.ws.scope.get(ABORT_KEY)
            if abort is not None:
                abort()
            raise _SendFailed from exc
        except (WebSocketDisconnect, RuntimeError, OSError) as exc:
            raise _SendFailed from exc

    async def _close(self, code: int, reason: str = "") -> None:
        self.states.move(ServerMove.CLOSE)
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            await self.ws.close(code, reason)
