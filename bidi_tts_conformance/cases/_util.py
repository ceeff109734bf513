"""Shared texts and checks for the case modules."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from bidi_tts.frames import FrameKind
from bidi_tts.session import ErrorReceived
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.diagnose import describe_close
from bidi_tts_conformance.driver import Conversation, Reply
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, non_strict, ok

SHORT = "Hello there."
SENTENCE = "The quick brown fox jumps over the lazy dog."
TINY = "Hi."
# Answered at once with an error by any container, no synthesis: a cheap "are you still listening?"
LIVENESS_PROBE = json.dumps({"type": "conformance-liveness-probe"})

_EXCEPTION_TEXT = re.compile(
    r"Traceback|\b[A-Z][A-Za-z]*(Error|Exception)\b|File \"|line \d+ column \d+ \(char \d+\)|"
    r"codec can't decode|object has no attribute|not subscriptable|unexpected keyword"
)
_BARE_REPR = re.compile(r"""^(['"]).*\1$|^\w+$""")


def message_problem(message: str | None) -> str | None:
    """Why an error message is not a human message (a leaked exception string), or None."""
    if message is None or not message.strip():
        return "the error frame has no human message"
    text = message.strip()
    if _BARE_REPR.match(text):
        return (f"the error message {text!r} is a bare exception string (like str(KeyError('text'))), "
                "not a message for people")
    if _EXCEPTION_TEXT.search(text):
        return f"the error message {text[:120]!r} leaks internal exception text"
    return None


def rms(pcm: bytes | bytearray) -> float:
    """Root mean square of s16le PCM (0 for no samples)."""
    usable = len(pcm) - len(pcm) % 2
    if usable <= 0:
        return 0.0
    samples = np.frombuffer(bytes(pcm[:usable]), dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(samples * samples)))


@dataclass(frozen=True)
class Bad:
    """One bad input and the answers CONTRACT.md allows for it."""

    what: str
    payload: bytes | str
    codes: tuple[str, ...]
    close_codes: tuple[int, ...] = ()
    kind: FrameKind = FrameKind.TEXT
    accept_success: bool = False  # input the container may also take and synthesize

    @property
    def answers(self) -> str:
        closes = f" (or close {'/'.join(map(str, sorted(self.close_codes)))})" if self.close_codes else ""
        return " or ".join(sorted(self.codes)) + closes


async def usable_after(conv: Conversation, what: str) -> Reply:
    """The session must still synthesize after `what`; fail naming it otherwise."""
    try:
        return await conv.say(TINY, lenient=True)
    except CaseFailed as exc:
        raise CaseFailed(f"the session is not usable after {what}: {exc.detail}",
                         expected="the next message is synthesized", actual=exc.actual) from None


async def still_listening(conv: Conversation, what: str) -> None:
    """The session must still answer (any coded answer) after `what`, without costing a synthesis."""
    rid = conv.track(text="(liveness probe)")
    try:
        await conv.send_raw(LIVENESS_PROBE)
        reply = await conv.wait_reply(rid)
    except CaseFailed as exc:
        raise CaseFailed(f"the session stopped answering after {what}: {exc.detail}",
                         expected="the session stays usable", actual=exc.actual) from None
    if reply.error is None:
        raise CaseFailed(f"after {what}, an unknown message type was synthesized instead of refused",
                         expected="error unknown_type", actual="synthesis")


async def fresh_session_works(ctx: CaseContext, what: str) -> None:
    """A new session must work (after a fatal close of the previous one)."""
    conv = await ctx.conversation()
    try:
        await conv.say(TINY, lenient=True)
    except CaseFailed as exc:
        raise CaseFailed(f"a new session does not work after {what}: {exc.detail}", expected=exc.expected,
                         actual=exc.actual) from None
    finally:
        await conv.close()


async def expect_refusal(ctx: CaseContext, bad: Bad) -> Outcome:
    """Send one bad message; expect a coded error frame (or an allowed fatal close), then a usable
    session (or, after a fatal close, a usable new session)."""
    conv = await ctx.conversation()
    outcome = await refuse(conv, bad)
    if conv.closed is not None:
        await fresh_session_works(ctx, f"the session was closed with {conv.closed.code} for {bad.what}")
    else:
        await usable_after(conv, bad.what)
    return outcome


async def refuse(conv: Conversation, bad: Bad) -> Outcome:
    """Send one bad message on `conv` and judge the first answer (not the session's usability after it).
    An allowed fatal close leaves `conv.closed` set. Judged at the first sign: a synthesis_start or
    audio for a message that must be refused fails at once, without waiting for the synthesis."""
    rid = conv.track()
    expected = f"error frame {bad.answers}"
    try:
        await conv.send_raw(bad.payload, kind=bad.kind)
    except CaseFailed:
        # A container may close (1009) while a huge message is still being sent: that is its answer.
        if conv.closed is not None and conv.closed.code in bad.close_codes:
            return ok(f"{bad.what}: closed with {conv.closed.code}")
        raise
    try:
        reply = await conv.wait_answer(rid)
    except CaseFailed as exc:
        raise CaseFailed(f"{bad.what}: {exc.detail}", expected=expected, actual=exc.actual) from None
    if reply.error is None and reply.answered:
        if not bad.accept_success:
            happened, actual = await after_announcing(conv, reply)
            raise CaseFailed(f"{bad.what}: {happened}", expected=expected, actual=actual)
        await conv.wait_reply(rid, lenient=True)
        return ok(f"{bad.what}: synthesized normally (allowed)")
    if reply.error is None:
        closed = conv.closed
        assert closed is not None
        if closed.code in bad.close_codes:
            return ok(f"{bad.what}: closed with {closed.code}")
        raise CaseFailed(f"{bad.what}: the container {describe_close(closed)} instead of answering with an "
                         f"error frame", expected=expected, actual=describe_close(closed))
    return judge_error(conv, reply.error, bad)


AFTER_START_S = 1.0  # how long a refused message's fate is followed after its synthesis_start
AFTER_ERROR_S = 0.3  # and how long after its error, for a close


async def after_announcing(conv: Conversation, reply: Reply) -> tuple[str, str]:
    """What a container did with a message it answered (synthesis_start or audio) but must refuse, followed for at
    most AFTER_START_S: (the detail, the short actual). Announced, then refused (and maybe dropped), is
    not "accepted and synthesized"."""
    record = reply.record
    await conv.pump_until(lambda: record.done or bool(reply.audio) or conv.closed is not None,
                          silence=AFTER_START_S, total=AFTER_START_S)
    if reply.error is not None and conv.closed is None:  # a close right after the error: read it too
        await conv.pump_until(lambda: conv.closed is not None, silence=AFTER_ERROR_S, total=AFTER_ERROR_S)
    drop = describe_close(conv.closed) if conv.closed is not None else ""  # "closed the session with 1011 ..."
    dropped = f" and {drop}" if drop else ""
    if reply.error is not None:
        code = reply.error.code or "(no code)"
        return (f"the container announced the message (synthesis_start), then refused it with error {code}"
                f"{dropped}: a message that must be refused is not announced",
                f"synthesis_start, then error {code}" + (", then a close" if dropped else ""))
    if reply.audio:
        what = "synthesis_start and audio" if reply.started is not None else "audio"
        return f"the message was accepted and synthesized ({what} arrived)", what
    if conv.closed is not None:
        return (f"the container announced the message (synthesis_start), then {drop} without an error frame",
                "synthesis_start, then a close")
    return ("the message was accepted (synthesis_start arrived)", "synthesis_start")


def require_code(error: ErrorReceived, allowed: str, said: str, *, expected: str | None = None) -> None:
    """Fail unless `error` carries the code `allowed`: the detail is `said` and the code it carries; expected
    `expected` (else `allowed`), actual the code as sent."""
    if error.code != allowed:
        raise CaseFailed(f"{said} {error.code or '(no code)'}", expected=expected or allowed, actual=str(error.code))


def judge_error(conv: Conversation, got: ErrorReceived, bad: Bad) -> Outcome:
    """An error frame for `bad`: the right code, a human message; NON-STRICT for warnings in focus."""
    if got.code is None:
        shown = json.dumps(got.control, ensure_ascii=False)
        raise CaseFailed(f"{bad.what}: the error frame has no code (missing error code): {shown}",
                         expected=f"error code {bad.answers}", actual="no code")
    if got.code not in bad.codes:
        raise CaseFailed(f"{bad.what}: answered with error code {got.code!r}, expected {bad.answers}",
                         expected=bad.answers, actual=got.code)
    if problem := message_problem(got.message):  # errors.message.1 judges the messages
        conv.notes.add(f"TTS-ERROR: {problem} (judged by errors.message.1)")
    notes = conv.warnings()
    if notes:
        return non_strict(f"{bad.what}: {got.code}; but {notes[0]}")
    return ok(f"{bad.what}: error {got.code}")
