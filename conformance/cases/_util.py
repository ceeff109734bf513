"""Shared texts and checks for the case modules."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from bidi_tts.frames import FrameKind
from bidi_tts.session import ErrorReceived
from conformance.context import CaseContext
from conformance.driver import Conversation, Reply
from conformance.model import CaseFailed, Outcome, non_strict, ok

SHORT = "Hello there."
SENTENCE = "The quick brown fox jumps over the lazy dog."
TINY = "Hi."

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


async def usable_after(conv: Conversation, what: str) -> Reply:
    """The session must still synthesize after `what`; fail naming it otherwise."""
    try:
        return await conv.say(TINY)
    except CaseFailed as exc:
        raise CaseFailed(f"the session is not usable after {what}: {exc.detail}",
                         expected="the next message is synthesized", actual=exc.actual) from None


async def fresh_session_works(ctx: CaseContext, what: str) -> None:
    """A new session must work (after a fatal close of the previous one)."""
    conv = await ctx.conversation()
    try:
        await conv.say(TINY)
    except CaseFailed as exc:
        raise CaseFailed(f"a new session does not work after {what}: {exc.detail}") from None
    finally:
        await conv.close()


async def expect_refusal(
    ctx: CaseContext,
    payload: bytes | str,
    codes: Iterable[str],
    *,
    what: str,
    kind: FrameKind | None = FrameKind.TEXT,
    close_codes: Iterable[int] = (),
    accept_success: bool = False,
    request_id: str | None = None,
) -> Outcome:
    """Send one bad message; expect a coded error frame (or an allowed fatal close), then a usable
    session. With `accept_success`, a normal synthesis is also fine (input the container may take)."""
    conv = await ctx.conversation()
    outcome = await refuse(conv, payload, codes, what=what, kind=kind, close_codes=close_codes,
                           accept_success=accept_success, request_id=request_id)
    if conv.closed is not None:
        await fresh_session_works(ctx, f"the session was closed with {conv.closed.code} for {what}")
    else:
        await usable_after(conv, what)
    return outcome


async def refuse(
    conv: Conversation,
    payload: bytes | str,
    codes: Iterable[str],
    *,
    what: str,
    kind: FrameKind | None = FrameKind.TEXT,
    close_codes: Iterable[int] = (),
    accept_success: bool = False,
    request_id: str | None = None,
) -> Outcome:
    """Send one bad message on `conv` and judge the answer (not the session's usability after it).
    An allowed fatal close leaves `conv.closed` set."""
    codes, close_codes = set(codes), set(close_codes)
    rid = conv.track(request_id)
    expected = " or ".join(sorted(codes)) + (
        f" (or close {'/'.join(map(str, sorted(close_codes)))})" if close_codes else "")
    try:
        await conv.send_raw(payload, kind=kind)
    except CaseFailed:
        # A container may close (1009) while a huge message is still being sent: that is its answer.
        if conv.closed is not None and conv.closed.code in close_codes:
            return ok(f"{what}: closed with {conv.closed.code}")
        raise
    try:
        reply = await conv.wait_reply(rid)
    except CaseFailed as exc:
        closed = conv.closed
        if closed is None:
            raise CaseFailed(f"{what}: {exc.detail}", expected=f"error frame {expected}",
                             actual=exc.actual) from None
        if closed.code in close_codes:
            return ok(f"{what}: closed with {closed.code}")
        raise CaseFailed(
            f"{what}: the container closed the session (code {closed.code}, reason {closed.reason!r}) "
            f"instead of answering with an error frame", expected=f"error frame {expected}",
            actual=f"close {closed.code}") from None
    if reply.error is None:
        if accept_success:
            conv.raise_violations()
            return ok(f"{what}: synthesized normally (allowed)")
        raise CaseFailed(f"{what}: the message was accepted and synthesized ({len(reply.audio)} audio bytes)",
                         expected=f"error frame {expected}", actual="synthesis_complete")
    return _judge_error(conv, reply.error, codes, expected, what)


def _judge_error(
    conv: Conversation, got: ErrorReceived, codes: set[str], expected: str, what: str
) -> Outcome:
    if got.code is None:
        raise CaseFailed(f"{what}: the error frame has no code (missing error code): {got.control}",
                         expected=f"error code {expected}", actual="no code")
    if got.code not in codes:
        raise CaseFailed(f"{what}: answered with error code {got.code!r}, expected {expected}",
                         expected=expected, actual=got.code)
    problem = message_problem(got.message)
    if problem:
        raise CaseFailed(f"{what}: {problem}", expected="a human message", actual=repr(got.message))
    notes = conv.warnings()
    if notes:
        return non_strict(f"{what}: {got.code}; but {notes[0]}")
    return ok(f"{what}: error {got.code}")
