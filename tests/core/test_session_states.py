"""bidi_tts.session's state machine: every move the table refuses raises LocalProtocolError, and
leaves the session as it was; the moves it allows take the session where the table says."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from bidi_tts import protocol
from bidi_tts.frames import Frame, FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import TRANSITIONS, ClientSession, LocalProtocolError, Move, SessionState

_ids = itertools.count()


def in_state(state: SessionState) -> ClientSession:
    """A session brought to `state` by legal moves only."""
    s = ClientSession()
    if state is SessionState.STREAMING:
        s.synthesize(SynthesizeRequest("Hello.", request_id="r1"), at=1.0)
        s.receive_frame(Frame(protocol.synthesis_start("r1", 24_000).encode(), FrameKind.TEXT, 1.1))
    elif state is SessionState.CLOSING:
        s.close()
    elif state is SessionState.CLOSED:
        s.connection_closed(1000, at=2.0)
    assert s.state is state
    return s


def start_frame() -> Frame:
    return Frame(protocol.synthesis_start("x", 24_000).encode(), FrameKind.TEXT, 3.0)


#: The call that makes each move a caller can make directly (START and END arrive inside frames).
CALLS: dict[Move, Callable[[ClientSession], object]] = {
    Move.SEND_MESSAGE: lambda s: s.synthesize(SynthesizeRequest("More.", request_id=f"m{next(_ids)}"), at=3.0),
    Move.SEND_CLOSE: lambda s: s.close(),
    Move.RECEIVE_FRAME: lambda s: s.receive_frame(start_frame()),
    Move.GIVE_UP: lambda s: s.give_up_current(),
    Move.CONNECTION_CLOSED: lambda s: s.connection_closed(1006, at=3.0),
}
ILLEGAL = [(state, move) for state in SessionState for move in CALLS if move not in TRANSITIONS[state]]


def test_the_table_has_a_row_per_state_and_refuses_what_it_should() -> None:
    assert set(TRANSITIONS) == set(SessionState)
    assert set(ILLEGAL) == {
        (SessionState.CLOSING, Move.SEND_MESSAGE), (SessionState.CLOSING, Move.SEND_CLOSE),
        (SessionState.CLOSED, Move.SEND_MESSAGE), (SessionState.CLOSED, Move.SEND_CLOSE),
        (SessionState.CLOSED, Move.RECEIVE_FRAME), (SessionState.CLOSED, Move.CONNECTION_CLOSED),
    }


@pytest.mark.parametrize(("state", "move"), ILLEGAL, ids=lambda v: str(v))
def test_an_illegal_move_raises_and_changes_nothing(state: SessionState, move: Move) -> None:
    s = in_state(state)
    records, violations = dict(s.records), list(s.violations)
    with pytest.raises(LocalProtocolError) as raised:
        CALLS[move](s)
    assert (raised.value.state, raised.value.move) == (state, move)
    assert f"cannot {move.value} in state {state.value}" in str(raised.value)
    assert s.state is state and s.records == records and s.violations == violations


@pytest.mark.parametrize(
    ("state", "move"),
    [(state, move) for state in SessionState for move in CALLS if move in TRANSITIONS[state]],
    ids=lambda v: str(v),
)
def test_a_legal_move_goes_where_the_table_says(state: SessionState, move: Move) -> None:
    s = in_state(state)
    CALLS[move](s)
    expected = TRANSITIONS[state][move]
    if move is Move.RECEIVE_FRAME:  # the frame is a synthesis_start: a START follows the receive
        expected = TRANSITIONS[expected][Move.START]
    assert s.state is expected


def test_synthesize_after_close_is_refused_unless_on_purpose() -> None:
    s = ClientSession()
    s.close()
    with pytest.raises(LocalProtocolError, match="cannot send a message in state closing"):
        s.synthesize(SynthesizeRequest("Late.", request_id="late"), at=4.0)
    assert "late" not in s.records
    # A conformance suite sends it anyway to see that the container ignores it: recorded, still closing.
    s.synthesize(SynthesizeRequest("Late.", request_id="late"), at=4.0, on_purpose=True)
    assert s.records["late"].sent_at == 4.0 and s.in_flight == 1 and s.state is SessionState.CLOSING
    s.close(on_purpose=True)
    assert s.state is SessionState.CLOSING


def test_a_used_request_id_is_refused_with_the_state_and_move() -> None:
    s = in_state(SessionState.STREAMING)
    with pytest.raises(LocalProtocolError, match="'r1' already used") as raised:
        s.synthesize(SynthesizeRequest("Again.", request_id="r1"), at=5.0)
    assert (raised.value.state, raised.value.move) == (SessionState.STREAMING, Move.SEND_MESSAGE)


def test_the_containers_mistakes_are_violations_never_exceptions() -> None:
    s = in_state(SessionState.CLOSING)  # frames still arrive while the container finishes
    events = s.receive_frame(Frame(protocol.synthesis_complete("nobody", 0, 24_000).encode(), FrameKind.TEXT, 5.0))
    assert s.violations and events[0] in s.violations and s.state is SessionState.CLOSING
