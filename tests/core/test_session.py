"""bidi_tts.session: events, timings and the ordering rules it must catch."""

from __future__ import annotations

import json

import pytest

from bidi_tts import protocol
from bidi_tts.frames import Frame, FrameKind
from bidi_tts.protocol import ErrorCode, SynthesizeRequest
from bidi_tts.session import (
    AudioReceived,
    ClientSession,
    ErrorReceived,
    LocalProtocolError,
    ProtocolViolation,
    SessionState,
    Severity,
    SynthesisCompleted,
    SynthesisStarted,
)


def text(payload: str, at: float) -> Frame:
    return Frame(payload.encode(), FrameKind.TEXT, at)


def audio(n: int, at: float, kind: FrameKind | None = FrameKind.BINARY) -> Frame:
    return Frame(b"\x01\x00" * (n // 2) + b"\x01" * (n % 2), kind, at)


def start(rid: str, at: float, rate: int = 24_000) -> Frame:
    return text(protocol.synthesis_start(rid, rate), at)


def complete(rid: str, n: int, at: float) -> Frame:
    return text(protocol.synthesis_complete(rid, n, 24_000), at)


def errors(session: ClientSession) -> list[ProtocolViolation]:
    return [v for v in session.violations if v.severity is Severity.ERROR]


def sent(session: ClientSession, rid: str = "r1", at: float = 10.0) -> None:
    payload = session.synthesize(SynthesizeRequest("Hello.", request_id=rid), at=at)
    assert json.loads(payload)["request_id"] == rid


def test_clean_message_has_events_timings_and_no_violation() -> None:
    s = ClientSession()
    sent(s)
    assert s.in_flight == 1
    events = s.receive_frame(start("r1", 10.1))
    assert isinstance(events[-1], SynthesisStarted) and s.state is SessionState.STREAMING
    assert isinstance(s.receive_frame(audio(4800, 10.25))[-1], AudioReceived)
    s.receive_frame(audio(2400, 10.3))
    done = s.receive_frame(complete("r1", 7200, 10.4))
    assert isinstance(done[-1], SynthesisCompleted)
    assert done[-1].audio_bytes_reported == done[-1].audio_bytes_received == 7200
    rec = s.records["r1"]
    assert rec.ttfa_s == pytest.approx(0.25)  # from the send to the first AUDIO frame, not the start
    assert rec.complete_s == pytest.approx(0.4)
    assert rec.audio_seconds == pytest.approx(0.15)
    assert rec.frame_sizes == [4800, 2400] and rec.done
    assert s.violations == [] and s.in_flight == 0 and s.state is SessionState.IDLE


def test_two_messages_in_a_row_stay_separate() -> None:
    s = ClientSession()
    sent(s, "a", 1.0)
    sent(s, "b", 1.0)
    for frame in [start("a", 1.1), audio(100, 1.2), complete("a", 100, 1.3),
                  start("b", 1.4), audio(200, 1.5), complete("b", 200, 1.6)]:  # fmt: skip
        s.receive_frame(frame)
    assert s.violations == []
    assert s.records["a"].audio_bytes == 100 and s.records["b"].audio_bytes == 200
    assert s.records["b"].ttfa_s == pytest.approx(0.5)


def test_audio_before_start_is_an_order_violation() -> None:
    s = ClientSession()
    sent(s)
    events = s.receive_frame(audio(480, 10.1))
    assert [v.clause for v in events if isinstance(v, ProtocolViolation)] == ["TTS-ORDER"]
    assert s.records["r1"].first_audio_at is None


def test_odd_length_audio_is_an_audio_violation() -> None:
    s = ClientSession()
    sent(s)
    s.receive_frame(start("r1", 10.1))
    events = s.receive_frame(audio(481, 10.2))
    assert any(isinstance(e, ProtocolViolation) and e.clause == "TTS-AUDIO" for e in events)
    assert [v.clause for v in errors(s)] == ["TTS-AUDIO"]


def test_complete_without_start_is_an_order_violation() -> None:
    s = ClientSession()
    sent(s)
    s.receive_frame(complete("r1", 0, 10.1))
    assert any("without synthesis_start" in v.description for v in errors(s))


def test_wrong_audio_bytes_is_detected() -> None:
    s = ClientSession()
    sent(s)
    for frame in [start("r1", 10.1), audio(1000, 10.2)]:
        s.receive_frame(frame)
    events = s.receive_frame(complete("r1", 999, 10.3))
    assert any(isinstance(e, ProtocolViolation) and "999" in e.description for e in events)
    done = events[-1]
    assert isinstance(done, SynthesisCompleted) and done.audio_bytes_received == 1000


def test_complete_with_no_audio_is_a_violation_unless_cancelled() -> None:
    s = ClientSession()
    sent(s, "a")
    s.receive_frame(start("a", 10.1))
    s.receive_frame(complete("a", 0, 10.2))
    assert any("no audio" in v.description for v in errors(s))
    s2 = ClientSession()
    sent(s2, "b")
    s2.receive_frame(start("b", 10.1))
    s2.receive_frame(text(protocol.synthesis_complete("b", 0, 24_000, cancelled=True), 10.2))
    assert errors(s2) == [] and s2.records["b"].cancelled


def test_start_before_previous_complete_is_an_order_violation() -> None:
    s = ClientSession()
    sent(s, "a")
    sent(s, "b")
    s.receive_frame(start("a", 1.0))
    s.receive_frame(audio(10, 1.1))
    s.receive_frame(start("b", 1.2))
    assert any("before synthesis_complete" in v.description for v in errors(s))


def test_error_mid_stream_ends_the_message_and_later_audio_is_a_violation() -> None:
    s = ClientSession()
    sent(s)
    s.receive_frame(start("r1", 10.1))
    s.receive_frame(audio(100, 10.2))
    events = s.receive_frame(text(protocol.error_frame(ErrorCode.INTERNAL, request_id="r1"), 10.3))
    err = events[-1]
    assert isinstance(err, ErrorReceived) and err.code == "internal"
    assert s.records["r1"].error_code == "internal" and s.records["r1"].done
    assert s.state is SessionState.IDLE and s.current is None and s.in_flight == 0
    assert s.violations == []  # a failure may interrupt a started message
    s.receive_frame(audio(100, 10.4))  # audio after the message ended
    assert [v.clause for v in errors(s)] == ["TTS-ORDER"]


def test_input_error_mid_stream_is_a_warning() -> None:
    s = ClientSession()
    sent(s)
    s.receive_frame(start("r1", 10.1))
    events = s.receive_frame(text(protocol.error_frame(ErrorCode.BAD_SPEED, request_id="r1"), 10.2))
    assert isinstance(events[-1], ErrorReceived) and errors(s) == []
    assert [(v.clause, v.severity) for v in s.violations] == [("TTS-ORDER", Severity.WARNING)]


def test_error_for_a_pending_message_answers_it() -> None:
    s = ClientSession()
    sent(s, "bad")
    s.receive_frame(text(protocol.error_frame(ErrorCode.BAD_SPEED, request_id="bad"), 10.1))
    assert s.records["bad"].error_code == "bad_speed" and s.in_flight == 0 and errors(s) == []


def test_error_frame_without_code_is_a_violation() -> None:
    s = ClientSession()
    s.receive_frame(text('{"type": "error", "message": "oops"}', 1.0))
    assert [v.clause for v in errors(s)] == ["TTS-ERROR"]


def test_text_frame_that_is_not_json_is_an_audio_violation() -> None:
    s = ClientSession()
    events = s.receive_frame(Frame(b"\x00\x01", FrameKind.TEXT, 1.0))
    assert isinstance(events[0], ProtocolViolation) and events[0].clause == "TTS-AUDIO"


def test_binary_frame_with_json_bytes_counts_as_audio() -> None:
    s = ClientSession()
    sent(s)
    s.receive_frame(start("r1", 10.1))
    payload = b'{"type":"synthesis_complete"}\x00'  # even length, JSON-looking, BINARY: audio
    s.receive_frame(Frame(payload, FrameKind.BINARY, 10.2))
    assert s.records["r1"].audio_bytes == len(payload) and s.state is SessionState.STREAMING


def test_unknown_kind_uses_the_rule() -> None:
    s = ClientSession()
    sent(s)
    s.receive_frame(Frame(protocol.synthesis_start("r1", 24_000).encode(), None, 10.1))
    s.receive_frame(audio(64, 10.2, kind=None))
    assert s.state is SessionState.STREAMING and s.records["r1"].audio_bytes == 64


def test_request_id_not_echoed_is_a_warning() -> None:
    s = ClientSession()
    sent(s)
    s.receive_frame(start("other", 10.1))
    assert errors(s) == [] and [v.severity for v in s.violations] == [Severity.WARNING]


def test_start_without_a_valid_sample_rate() -> None:
    s = ClientSession()
    sent(s)
    s.receive_frame(text('{"type": "synthesis_start", "request_id": "r1"}', 10.1))
    assert any(v.clause == "TTS-AUDIO" for v in errors(s))


def test_duplicate_request_id_refused_and_close_payload() -> None:
    s = ClientSession()
    sent(s)
    with pytest.raises(LocalProtocolError):
        s.synthesize(SynthesizeRequest("again", request_id="r1"), at=10.5)
    assert json.loads(s.close()) == {"type": "close"} and s.state is SessionState.CLOSING
    closed = s.connection_closed(1000, "bye", at=5.0)
    assert closed.code == 1000 and s.state is SessionState.CLOSED and s.close_code == 1000


def test_a_wrapped_sample_is_an_audio_violation_with_its_time_once_a_message() -> None:
    import numpy as np

    s = ClientSession()
    sent(s)
    s.receive_frame(start("r1", 10.1))
    quiet = np.zeros(2400, dtype="<i2").tobytes()  # 0.1 s
    wrap = np.array([31000, 32700, -32600, -31000], dtype="<i2").tobytes()
    assert not errors(s) and not s.receive_frame(Frame(quiet, FrameKind.BINARY, 10.2))[:-1]
    s.receive_frame(Frame(wrap, FrameKind.BINARY, 10.3))
    s.receive_frame(Frame(wrap, FrameKind.BINARY, 10.4))
    (violation,) = errors(s)
    assert violation.clause == "TTS-AUDIO" and violation.rule == "audio.wrapped"
    assert violation.description.startswith("a wrapped sample at 0.100 s into the audio: +32700 then -32600")
    assert len(s.records["r1"].wraps.wraps) == 3  # two in the frames, one at the seam between them
