"""One bidirectional-streaming WebSocket session in the kokoro-sample protocol (CONTRACT.md section 1).

The reader and the processor, the inbox, the streaming of audio and the bounded sends are
:class:`reference_container.session_base.SessionBase`'s; this dialect decides the wire. Parse errors
are queued in order with the messages, so an error frame never lands inside another message's audio.
The session's state (idle, streaming, closing, closed: the client's states) moves by the table of
:mod:`reference_container.session_state`; an illegal move raises.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket

from bidi_tts import protocol
from reference_container.drain import GOING_AWAY_REASON
from reference_container.scheduler import Busy, JobCancelled, JobFailed
from reference_container.session_base import SessionBase
from reference_container.session_state import ServerMove, ServerSessionState
from reference_container.state import AppState
from reference_container.streaming import MessageStats

_session_ids = itertools.count(1)


@dataclass(eq=False)
class _Item:
    """One received message waiting for the processor."""

    request: protocol.SynthesizeRequest | None = None
    error: protocol.ProtocolError | None = None
    close: bool = False
    close_code: int = protocol.CloseCode.NORMAL
    close_reason: str = ""
    cancelled: bool = False


class WsSession(SessionBase[_Item]):
    """Serves one WebSocket connection until close, disconnect or a fatal error."""

    def __init__(self, ws: WebSocket, state: AppState) -> None:
        super().__init__(ws, state, f"ws-{next(_session_ids)}")
        self._current: _Item | None = None
        self.states = ServerSessionState()
        self._messages = 0

    def _end_fields(self) -> Mapping[str, Any]:
        return {"messages": self._messages, "gone": self.states.peer_gone}

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
    def _taking_messages(self) -> bool:
        return self.states.taking_messages  # after `close`, nothing new is taken

    def _on_disconnect(self) -> None:
        self.states.move(ServerMove.GONE)
        self._cancel_all()

    def _on_data(self, data: bytes | str) -> None:
        try:
            parsed = protocol.parse_client_message(data, self.state.limits)
        except protocol.ProtocolError as exc:
            self._push(_Item(error=exc))  # answered in order; fatal ones close after the frame
            return
        if isinstance(parsed, protocol.CloseRequest):
            self.states.move(ServerMove.RECEIVE_CLOSE)
            self._push(_Item(close=True))
        elif isinstance(parsed, protocol.CancelRequest):
            self._cancel_all()
        elif self._inbox_full():
            self._push(_Item(error=protocol.ProtocolError(
                protocol.ErrorCode.BUSY, "Too many messages are waiting in this session.",
                request_id=parsed.request_id)))
        else:
            self._push(_Item(request=parsed))

    def _cancel_all(self) -> None:
        """`cancel`: the current message and every message received before it stop."""
        for item in self._inbox:
            item.cancelled = True
        if self._current is not None:
            self._current.cancelled = True
        self.state.scheduler.cancel_session(self.id)

    # -- processing -----------------------------------------------------------------------------
    def _finished(self) -> bool:
        return self.states.closed

    def _peer_gone(self) -> None:
        self.states.move(ServerMove.GONE)

    def _closing(self) -> None:
        self.states.move(ServerMove.CLOSE)

    async def _handle(self, item: _Item) -> bool:
        if self.states.closed:
            return True
        if item.close:
            await self._close(item.close_code, item.close_reason)
            return True
        if item.error is not None:
            await self._send_text(protocol.error_from(item.error))
            if item.error.close_code is not None:
                await self._close(item.error.close_code)
                return True
            return False
        assert item.request is not None
        self._current = item
        self.states.move(ServerMove.START)
        try:
            await self._synthesize(item, item.request)
        finally:
            self._current = None
            self.states.move(ServerMove.END)
            self.state.scheduler.cancel_session(self.id)  # leftovers of a stopped message
        return False

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
                await self._stream(self._audio(request, stats), stats, lambda: item.cancelled)
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
