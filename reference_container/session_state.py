"""The states of one container-side WebSocket session, enforced by a transition table.

The states are the client's (:class:`bidi_tts.session.SessionState`: idle, streaming, closing,
closed), so both ends of a session are read in one vocabulary. The moves are the server's own, the
mirror of the client's sends and receipts (a close arrives, the container starts and ends a message,
closes, or finds its peer gone), hence this small table beside the client's rather than the client's
:data:`bidi_tts.session.TRANSITIONS`. An illegal move is a bug in the container and raises
:class:`SessionStateError`.
"""

from __future__ import annotations

from enum import StrEnum

from bidi_tts.session import SessionState


class ServerMove(StrEnum):
    """What moves a container-side session."""

    RECEIVE_CLOSE = "close arrives"  # the client's {"type": "close"}: nothing new is taken after it
    START = "a message starts"  # the processor takes the next message
    END = "the message ends"  # synthesis_complete, an error, or the message stopped
    CLOSE = "the container closes"  # after close, a fatal error or an internal failure
    GONE = "the peer is gone"  # a disconnect, or a send that failed or timed out


_I, _S, _CLOSING, _CLOSED = SessionState.IDLE, SessionState.STREAMING, SessionState.CLOSING, SessionState.CLOSED
#: state -> {move: next state}; a move missing from its state's row raises SessionStateError.
#: Once closed, a message may still end (its finally) and a second task may see the peer gone or
#: close too; nothing starts and no close is taken.
SERVER_TRANSITIONS: dict[SessionState, dict[ServerMove, SessionState]] = {
    _I: {ServerMove.RECEIVE_CLOSE: _CLOSING, ServerMove.START: _S, ServerMove.CLOSE: _CLOSED, ServerMove.GONE: _CLOSED},
    _S: {ServerMove.RECEIVE_CLOSE: _CLOSING, ServerMove.END: _I, ServerMove.CLOSE: _CLOSED, ServerMove.GONE: _CLOSED},
    _CLOSING: {ServerMove.START: _CLOSING, ServerMove.END: _CLOSING, ServerMove.CLOSE: _CLOSED,
               ServerMove.GONE: _CLOSED},
    _CLOSED: {ServerMove.END: _CLOSED, ServerMove.CLOSE: _CLOSED, ServerMove.GONE: _CLOSED},
}


class SessionStateError(Exception):
    """The container made a move its session's state does not allow."""

    def __init__(self, state: SessionState, move: ServerMove) -> None:
        self.state, self.move = state, move
        allowed = ", ".join(m.value for m in SERVER_TRANSITIONS[state])
        super().__init__(f"cannot take '{move.value}' in state {state.value} (allowed: {allowed})")


class ServerSessionState:
    """One session's state; :meth:`move` takes a move by :data:`SERVER_TRANSITIONS` or raises."""

    def __init__(self) -> None:
        self.state = SessionState.IDLE
        self.peer_gone = False  # the session ended because the peer went away (for the session log)

    def move(self, move: ServerMove) -> None:
        following = SERVER_TRANSITIONS[self.state].get(move)
        if following is None:
            raise SessionStateError(self.state, move)
        self.state = following
        if move is ServerMove.GONE:
            self.peer_gone = True

    @property
    def taking_messages(self) -> bool:
        """New messages are taken until close arrives or the session ends."""
        return self.state in (SessionState.IDLE, SessionState.STREAMING)

    @property
    def closed(self) -> bool:
        return self.state is SessionState.CLOSED
