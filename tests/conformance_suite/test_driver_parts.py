"""The driver's parts without a container: filing frames on replies, the one name of the silence bound."""

from __future__ import annotations

from typing import Any

import pytest

from bidi_tts import protocol
from bidi_tts.frames import Frame, FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession
from bidi_tts_conformance.driver import Conversation
from bidi_tts_conformance.reply import Reply, file_frame


def feed(session: ClientSession, replies: dict[str, Reply], frame: Frame) -> Reply | None:
    undone = [r for r in replies.values() if not r.record.done]
    return file_frame(frame, session.receive_frame(frame), replies, session, undone)


def text(payload: str, at: float) -> Frame:
    return Frame(payload.encode(), FrameKind.TEXT, at)


def test_frames_are_filed_on_the_message_they_answer() -> None:
    session = ClientSession()
    replies: dict[str, Reply] = {}
    for rid in ("a", "b"):
        session.synthesize(SynthesizeRequest("Hi.", request_id=rid), at=1.0)
        replies[rid] = Reply(session.records[rid])
    assert replies["a"].request_id == "a" and not replies["a"].answered
    assert feed(session, replies, text(protocol.synthesis_start("a", 24_000), 1.1)) is replies["a"]
    assert feed(session, replies, Frame(b"\x01\x00" * 10, FrameKind.BINARY, 1.2)) is replies["a"]
    assert feed(session, replies, text(protocol.synthesis_complete("a", 20, 24_000), 1.3)) is replies["a"]
    refusal = protocol.error_frame(protocol.ErrorCode.BAD_SPEED, "Speed must be 0.5-2.", "b")
    assert feed(session, replies, text(refusal, 1.4)) is replies["b"]
    a, b = replies["a"], replies["b"]
    assert a.started is not None and a.completed is not None and bytes(a.audio) == b"\x01\x00" * 10
    assert a.frame_kinds == ["text", "binary", "text"] and a.answered and a.record.done
    assert b.error is not None and b.error.code == "bad_speed" and b.started is None and b.frame_kinds == ["text"]


def test_a_frame_that_answers_nothing_sent_is_filed_nowhere() -> None:
    session = ClientSession()
    assert feed(session, {}, Frame(b"\x00\x00", FrameKind.BINARY, 1.0)) is None
    assert session.violations  # audio outside a message: the session's checker saw it


class _NoTransport:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the transport was used: {name}")


def test_the_silence_bound_has_one_name_and_the_old_one_still_works() -> None:
    conv = Conversation(_NoTransport(), silence=4.0, voice="af_heart", sample_rate=24_000)  # type: ignore[arg-type]
    assert conv.silence == conv.reply_timeout == conv.end_silence == 4.0
    old = Conversation(_NoTransport(), reply_timeout=3.0, voice="af_heart", sample_rate=24_000)  # type: ignore[arg-type]
    assert old.silence == 3.0
    with pytest.raises(TypeError, match="silence"):
        Conversation(_NoTransport(), voice="af_heart", sample_rate=24_000)  # type: ignore[arg-type]
