"""cancel.*: the optional {"type": "cancel"} extension (NON-STRICT when absent, FAILED when harmful)."""

from __future__ import annotations

import time

from bidi_tts.session import ErrorReceived
from bidi_tts_conformance.cases._midway import first_sign_of_work
from bidi_tts_conformance.cases._util import SENTENCE, usable_after
from bidi_tts_conformance.cases.frames import long_text, sentences
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.diagnose import describe_close
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, case, non_strict, not_judged, ok


@case("cancel.1", "cancel mid-synthesis: synthesis_complete with cancelled=true, soon",
      clauses=["TTS-ORDER", "TTS-SESSION"],
      expect='the cancel sent at synthesis_start (or 2x a sentence alone): synthesis_complete {"cancelled": true} '
             'soon, or (cancel unsupported) error unknown_type; the session stays usable')
async def cancel_mid(ctx: CaseContext) -> Outcome:
    warm = (await (await ctx.conversation()).say(SENTENCE, lenient=True)).record
    alone = warm.ttfa_s or 0.0
    text = long_text(600)
    conv = await ctx.conversation(patience=sentences(text) / 2)
    rid = await conv.synthesize(text)
    # Cancel at the first sign of work (synthesis_start, or audio where there is none), or 2x a sentence
    # alone after sending, whichever is first: a container that sends all audio at the end has nothing
    # left to cancel by its first audio.
    reply = await first_sign_of_work(conv, rid, 2 * alone + 0.05, message=f"a {len(text)}-character message")
    when = "sent at the message's first sign of work" if reply.answered else "sent before any answer"
    await conv.send_json({"type": "cancel"})
    sent = time.perf_counter()
    seen = len(conv.events)
    # A container that ignores the cancel would stream the whole long text: give it about three times
    # what the first answer took (or half the silence allowed), then call it unsupported instead of
    # waiting for the end.
    first = (reply.record.first_audio_at or reply.record.started_at or sent) - reply.record.sent_at
    patience = max(0.5 * conv.silence, 3 * first)
    why = await conv.pump_until(lambda: reply.record.done, total=patience)
    took = time.perf_counter() - sent
    if why == "total":
        return non_strict(f"cancel not supported (optional): audio kept coming for {took:.1f} s after the cancel")
    reply = await conv.wait_reply(rid, lenient=True)
    ended_at = reply.record.completed_at or (reply.record.frame_times or [sent])[-1]
    # The cancel's own answer, if any, comes after the message's end: read it here, so that it is
    # pinned on the cancel and not on the next message.
    await conv.quiet(min(1.0, max(0.3, conv.silence / 4)))
    answers = [e for e in conv.events[seen:] if isinstance(e, ErrorReceived)]
    refusal = reply.error or (answers[0] if answers else None)
    if refusal is not None:
        if refusal.code == "unknown_type":
            await usable_after(conv, "a refused cancel")
            return non_strict("cancel not supported (optional): answered unknown_type")
        said = f" {refusal.message!r}" if refusal.message else ""
        if refusal.code is None and conv.closed is None:
            # An uncoded refusal of an optional message that leaves the session usable: the missing code is
            # the errors.* cases' subject, not a harmful cancel.
            await usable_after(conv, "a refused cancel")
            return non_strict(f"cancel not supported (optional): answered with an error without a code{said}; "
                              "the session stays usable (the missing code: errors.*)")
        raise CaseFailed(f"the cancel was answered with error {refusal.code or '(no code)'}{said}",
                         expected='synthesis_complete {"cancelled": true} or error unknown_type',
                         actual=f"error {refusal.code or '(no code)'}{said}")
    conv.raise_violations()
    await usable_after(conv, "a cancel")
    if reply.completed is None:
        return non_strict(f"the audio stopped {took:.1f} s after the cancel, without synthesis_complete")
    if reply.completed.cancelled:
        return ok(f"cancelled {took * 1000:.0f} ms after the request")
    full = warm.audio_seconds / len(SENTENCE) * len(text)  # about what the whole text would make
    if reply.record.audio_seconds < 0.5 * full:  # stopped short, however soon
        shown = f"{reply.record.audio_seconds:.1f} s of audio of about {full:.0f} s"
        raise CaseFailed(f"the audio stopped after the cancel ({shown}), but synthesis_complete does not say "
                         '"cancelled": true: a client cannot tell a cancelled message from a finished one',
                         expected='synthesis_complete {"cancelled": true}', actual=f"no cancelled flag ({shown})")
    if ended_at - sent < 0.05:
        return not_judged(f"the message ended {max(0.0, ended_at - sent) * 1000:.0f} ms after the cancel was "
                          "sent: its work was done before the cancel arrived, nothing was left to cancel")
    return non_strict(f"cancel not supported (optional): the message ran to its end {took:.1f} s after the "
                      f"cancel ({when})")


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


@case("cancel.queued.1", "cancel with a second message queued behind the first: both are answered, each "
      "synthesis_complete counting the audio it carried", clauses=["TTS-ORDER", "TTS-SESSION"],
      expect="the first and the queued message each end (cancelled or not) with audio_bytes equal to the "
             "bytes received; the session stays usable")
async def cancel_queued(ctx: CaseContext) -> Outcome:
    text = long_text(600)
    conv = await ctx.conversation(patience=sentences(text) / 2)
    first = await conv.synthesize(text)
    queued = await conv.synthesize(SENTENCE)
    await conv.wait_answer(first)
    await conv.send_json({"type": "cancel"})
    replies = [await conv.wait_reply(first, lenient=True), await conv.wait_reply(queued, lenient=True)]
    for n, reply in enumerate(replies, 1):
        done = reply.completed
        if done is None:
            continue  # refused (an error) or no synthesis_complete: other cases judge those
        if done.audio_bytes_reported is None:
            continue  # no audio_bytes at all: audio.consistent.1's subject, not the cancel's
        if done.audio_bytes_reported != len(reply.audio):
            what = "cancelled " if done.cancelled else ""
            raise CaseFailed(f"message {n} of 2 ({what}synthesis_complete) reports audio_bytes="
                             f"{done.audio_bytes_reported} but carried {len(reply.audio)} bytes",
                             expected=f"audio_bytes {len(reply.audio)}",
                             actual=f"audio_bytes {done.audio_bytes_reported}")
    # The cancel's own answer, if any (cancel.1 judges it), is read here, not pinned on the next message.
    await conv.quiet(min(1.0, max(0.3, conv.silence / 4)))
    await usable_after(conv, "a cancel with a message queued")
    shown = ", ".join("cancelled" if r.completed is not None and r.completed.cancelled else
                      "refused" if r.error is not None else "completed" for r in replies)
    return ok(f"the two messages: {shown}")
