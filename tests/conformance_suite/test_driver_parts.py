"""The driver without a container: filing frames on replies, one name for the silence bound, six waits."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time
from typing import Any

import pytest

from bidi_tts import protocol
from bidi_tts.frames import Frame, FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession
from bidi_tts.transports.base import TransportTimeout
from bidi_tts_conformance.calibration import Calibration
from bidi_tts_conformance.context import Options
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


def test_the_silence_bound_has_one_name() -> None:
    conv = Conversation(_NoTransport(), silence=4.0, voice="af_heart", sample_rate=24_000)
    assert conv.silence == conv.end_silence == 4.0
    assert not hasattr(conv, "reply_timeout")
    assert "silence" in {f.name for f in dataclasses.fields(Options)}
    assert "silence" in {f.name for f in dataclasses.fields(Calibration)}
    with pytest.raises(TypeError, match="reply_timeout"):
        Conversation(_NoTransport(), reply_timeout=3.0, voice="af_heart", sample_rate=24_000)  # type: ignore
    with pytest.raises(TypeError, match="silence"):
        Conversation(_NoTransport(), voice="af_heart", sample_rate=24_000)  # type: ignore[call-arg]


def test_a_case_author_has_six_waits() -> None:
    waits = {name for name, member in inspect.getmembers(Conversation, inspect.iscoroutinefunction)
             if not name.startswith("_")} - {"synthesize", "send_raw", "send_json", "close_request", "close"}
    assert waits == {"pump_until", "wait_answer", "wait_reply", "say", "wait_closed", "quiet"}


class _Drip:
    """A transport that sends a two-byte frame every `gap` seconds."""

    knows_frame_kind = True

    def __init__(self, gap: float) -> None:
        self.gap = gap
        self.sent = 0

    async def receive(self, timeout: float | None = None) -> Frame:
        if timeout is not None and self.gap > timeout:
            await asyncio.sleep(timeout)
            raise TransportTimeout("quiet")
        await asyncio.sleep(self.gap)
        self.sent += 1
        return Frame(b"\x00\x00", FrameKind.BINARY, time.perf_counter())


def _pump(gap: float, done_after: int | None, total: float | None) -> tuple[str | None, float]:
    drip = _Drip(gap)
    conv = Conversation(drip, silence=0.2, voice="af_heart", sample_rate=24_000)  # type: ignore[arg-type]
    started = time.monotonic()
    why = asyncio.run(conv.pump_until(lambda: done_after is not None and drip.sent >= done_after, total=total))
    return why, time.monotonic() - started


def test_pump_until_says_why_it_stopped() -> None:
    assert _pump(0.01, 3, None)[0] is None
    why, took = _pump(0.5, None, None)  # nothing for the silence bound
    assert why == "silence" and 0.15 < took < 0.45
    why, took = _pump(0.02, None, 0.3)  # frames keep coming: the total bound ends it
    assert why == "total" and 0.25 < took < 0.6
