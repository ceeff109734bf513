"""The container's session states: the client's four states, moved by the server's table; an illegal
move raises."""

from __future__ import annotations

import pytest

from bidi_tts.session import SessionState
from reference_container.session_state import (
    SERVER_TRANSITIONS,
    ServerMove,
    ServerSessionState,
    SessionStateError,
)


def test_the_states_are_the_clients() -> None:
    assert set(SERVER_TRANSITIONS) == set(SessionState)


def test_a_session_closed_by_the_client_finishes_what_it_took_then_closes() -> None:
    s = ServerSessionState()
    seen = [s.state]
    for move in (ServerMove.START, ServerMove.RECEIVE_CLOSE, ServerMove.END, ServerMove.START, ServerMove.END,
                 ServerMove.CLOSE):
        s.move(move)
        seen.append(s.state)
    assert seen == ["idle", "streaming", "closing", "closing", "closing", "closing", "closed"]
    assert s.closed and not s.taking_messages and not s.peer_gone


@pytest.mark.parametrize(("before", "move"), [
    ((ServerMove.START,), ServerMove.START),  # two messages at once: the processor is strictly in order
    ((), ServerMove.END),  # no message to end
    ((ServerMove.RECEIVE_CLOSE,), ServerMove.RECEIVE_CLOSE),  # nothing is taken after close, close included
    ((ServerMove.GONE,), ServerMove.START),  # nothing starts for a peer that is gone
])
def test_an_illegal_move_raises_naming_the_state_and_the_move(before: tuple[ServerMove, ...],
                                                              move: ServerMove) -> None:
    s = ServerSessionState()
    for m in before:
        s.move(m)
    state = s.state
    with pytest.raises(SessionStateError, match=f"cannot take '{move.value}' in state {state.value}"):
        s.move(move)
    assert s.state is state  # an illegal move changes nothing


def test_a_peer_gone_mid_message_still_ends_it_and_both_tasks_may_see_it_go() -> None:
    s = ServerSessionState()
    s.move(ServerMove.START)
    s.move(ServerMove.GONE)  # the reader saw the disconnect
    s.move(ServerMove.END)  # the processor's message stops
    s.move(ServerMove.GONE)  # the processor's next send fails too
    assert s.closed and s.peer_gone
