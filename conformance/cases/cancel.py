"""cancel.*: the optional {"type": "cancel"} extension (NON-STRICT when absent, FAILED when harmful)."""

from __future__ import annotations

import time

from bidi_tts.transports.base import TransportTimeout
from conformance.cases._util import TINY, usable_after
from conformance.cases.frames import long_text
from conformance.context import CaseContext
from conformance.model import CaseFailed, Outcome, case, non_strict, ok


@case("cancel.1", "cancel mid-synthesis: synthesis_complete with cancelled=true, soon",
      clauses=["TTS-ORDER", "TTS-SESSION"],
      expect='synthesis_complete {"cancelled": true} after the cancel; the session stays usable')
async def cancel_mid(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rid = await conv.synthesize(long_text(600))
    reply = conv.replies[rid]
    deadline = time.perf_counter() + ctx.options.reply_timeout
    while not reply.audio and not reply.record.done and time.perf_counter() < deadline:
        try:
            await conv.pump(deadline - time.perf_counter())
        except TransportTimeout:
            break
    if not reply.audio:
        raise CaseFailed("no audio to cancel", expected="audio", actual="; ".join(conv.log[-3:]))
    await conv.send_json({"type": "cancel"})
    sent = time.perf_counter()
    reply = await conv.wait_reply(rid)
    took = time.perf_counter() - sent
    if reply.error is not None:
        if reply.error.code == "unknown_type":
            await usable_after(conv, "a refused cancel")
            return non_strict("cancel not supported (optional): answered unknown_type")
        raise CaseFailed(f"cancel answered with error {reply.error.code!r}")
    conv.raise_violations()
    await usable_after(conv, "a cancel")
    if reply.completed is None or not reply.completed.cancelled:
        return non_strict(f"cancel not supported (optional): the message ran to its end {took:.1f} s later")
    return ok(f"cancelled {took * 1000:.0f} ms after the request")


@case("cancel.idle.1", "cancel with nothing to cancel is harmless",
      clauses=["TTS-SESSION"], expect="no close; the session stays usable")
async def cancel_idle(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    await conv.say(TINY)
    await conv.send_json({"type": "cancel"})
    stray = await conv.quiet(0.5)
    if conv.closed is not None:
        raise CaseFailed(f"an idle cancel closed the session ({conv.closed.code})", expected="no close",
                         actual=f"close {conv.closed.code}")
    await usable_after(conv, "an idle cancel")
    if stray:
        return non_strict(f"an idle cancel was answered with {stray[0]}")
    return ok()
