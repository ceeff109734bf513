"""close.*: {"type": "close"} idle and mid-synthesis, in TEXT and BINARY frames; client close."""

from __future__ import annotations

import time

from bidi_tts.frames import FrameKind
from conformance.cases._util import SENTENCE, TINY
from conformance.context import CaseContext
from conformance.driver import Conversation
from conformance.model import CaseFailed, Outcome, case, non_strict, ok

PROMPT_CLOSE_S = 2.0  # a close slower than this bends the SHOULD of a prompt close


async def _expect_close_1000(conv: Conversation, sent_at: float) -> Outcome:
    try:
        closed = await conv.wait_closed()
    except CaseFailed as exc:
        raise CaseFailed(f"close request ignored: {exc.detail}", expected="close 1000",
                         actual="still open") from None
    elapsed = time.perf_counter() - sent_at
    if closed.code != 1000:
        raise CaseFailed(f"wrong close code {closed.code} (reason {closed.reason!r}) after a close request",
                         expected="1000", actual=str(closed.code))
    conv.raise_violations()
    if elapsed > PROMPT_CLOSE_S:
        return non_strict(f"closed with 1000, but only after {elapsed:.1f} s")
    return ok(f"closed with 1000 after {elapsed * 1000:.0f} ms")


@case("close.explicit.1", '{"type": "close"} on an idle session closes with 1000',
      clauses=["TTS-CLOSE"], expect="close frame 1000, promptly")
async def explicit_close(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    await conv.say(TINY)
    await conv.close_request()
    return await _expect_close_1000(conv, time.perf_counter())


@case("close.explicit.2", '{"type": "close"} in a BINARY frame closes with 1000',
      clauses=["TTS-CLOSE", "TTS-BINARY-IN"], expect="close frame 1000")
async def explicit_close_binary(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    await conv.close_request(kind=FrameKind.BINARY)
    return await _expect_close_1000(conv, time.perf_counter())


@case("close.synthesizing.1", "close while synthesizing: the current message is finished, then 1000",
      clauses=["TTS-CLOSE", "TTS-ORDER"], expect="synthesis_complete of the message, then close 1000")
async def close_while_synthesizing(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rid = await conv.synthesize(SENTENCE)
    await conv.close_request()
    sent = time.perf_counter()
    try:
        reply = await conv.wait_reply(rid)
    except CaseFailed as exc:
        code = conv.closed.code if conv.closed else None
        raise CaseFailed(f"the message in progress was not finished before the close (close code {code}): "
                         f"{exc.detail}", expected="synthesis_complete, then close 1000",
                         actual=f"close {code} first") from None
    if reply.error is not None:
        raise CaseFailed(f"the message was refused with {reply.error.code!r}")
    # The close is due once the message is finished: time it from synthesis_complete, not from the
    # request (the synthesis in between is work the contract asks for).
    finished_at = reply.completed.at if reply.completed is not None else sent
    outcome = await _expect_close_1000(conv, max(sent, finished_at))
    return outcome if outcome.verdict != "OK" else ok(f"finished {len(reply.audio)} bytes, then 1000")


@case("close.client.1", "the client closes (mid-synthesis and idle); the container carries on",
      clauses=["TTS-SESSION", "TTS-ISOLATION"], expect="a new session is served at once")
async def client_close(ctx: CaseContext) -> Outcome:
    first = await ctx.conversation()
    await first.synthesize(SENTENCE + " " + SENTENCE)
    await first.close()
    second = await ctx.conversation()
    await second.say(TINY)
    await second.close()
    third = await ctx.conversation()
    start = time.perf_counter()
    await third.say(TINY)
    return ok(f"next session served in {(time.perf_counter() - start) * 1000:.0f} ms")
