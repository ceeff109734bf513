"""cancel.*: the optional {"type": "cancel"} extension (NON-STRICT when absent, FAILED when harmful)."""

from __future__ import annotations

import time

from bidi_tts_conformance.cases._util import usable_after
from bidi_tts_conformance.cases.frames import long_text, sentences
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.diagnose import describe_close
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, case, non_strict, ok


@case("cancel.1", "cancel mid-synthesis: synthesis_complete with cancelled=true, soon",
      clauses=["TTS-ORDER", "TTS-SESSION"],
      expect='synthesis_complete {"cancelled": true} after the cancel; the session stays usable')
async def cancel_mid(ctx: CaseContext) -> Outcome:
    text = long_text(600)
    conv = await ctx.conversation(patience=sentences(text) / 2)
    rid = await conv.synthesize(text)
    reply = await conv.wait_answer(rid)
    await conv.pump_until(lambda: bool(reply.audio) or reply.record.done)
    if not reply.audio:
        raise CaseFailed(f"no audio to cancel; received: {conv.received()}", expected="audio",
                         actual="no audio")
    await conv.send_json({"type": "cancel"})
    sent = time.perf_counter()
    # A container that ignores the cancel would stream the whole long text: give it about three times
    # what the first audio took (or half the silence allowed), then call it unsupported instead of
    # waiting for the end.
    patience = max(0.5 * conv.reply_timeout, 3 * (reply.record.ttfa_s or 0.0))
    why = await conv.pump_until(lambda: reply.record.done, total=patience)
    took = time.perf_counter() - sent
    if why == "total":
        return non_strict(f"cancel not supported (optional): audio kept coming for {took:.1f} s after the cancel")
    reply = await conv.collect(rid)
    if reply.error is not None:
        if reply.error.code == "unknown_type":
            await usable_after(conv, "a refused cancel")
            return non_strict("cancel not supported (optional): answered unknown_type")
        raise CaseFailed(f"cancel answered with error {reply.error.code or '(no code)'}",
                         expected='synthesis_complete {"cancelled": true} or error unknown_type',
                         actual=f"error {reply.error.code}")
    conv.raise_violations()
    await usable_after(conv, "a cancel")
    if reply.completed is None:
        return non_strict(f"the audio stopped {took:.1f} s after the cancel, without synthesis_complete")
    if not reply.completed.cancelled:
        return non_strict(f"cancel not supported (optional): the message ran to its end {took:.1f} s later")
    return ok(f"cancelled {took * 1000:.0f} ms after the request")


@case("cancel.idle.1", "cancel with nothing to cancel (a new session) is harmless",
      clauses=["TTS-SESSION"], expect="no close; the session stays usable")
async def cancel_idle(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    await conv.send_json({"type": "cancel"})
    stray = await conv.quiet(0.5)
    if conv.closed is not None:
        raise CaseFailed(f"an idle cancel: the container {describe_close(conv.closed)}", expected="no close",
                         actual=f"close {conv.closed.code}")
    await usable_after(conv, "an idle cancel")
    if stray:
        return non_strict(f"an idle cancel was answered with {stray[0]}")
    return ok()
