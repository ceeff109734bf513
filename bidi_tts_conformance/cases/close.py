"""close.*: {"type": "close"} idle and mid-synthesis, in TEXT and BINARY frames; client close."""

from __future__ import annotations

import time

from bidi_tts.chunker import split_sentences
from bidi_tts.frames import FrameKind
from bidi_tts_conformance.cases._midway import first_sign_of_work
from bidi_tts_conformance.cases._util import SENTENCE, TINY
from bidi_tts_conformance.cases.frames import long_text, sentences
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.diagnose import describe_close
from bidi_tts_conformance.driver import Conversation
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, case, non_strict, not_judged, ok

PROMPT_CLOSE_S = 2.0  # a close slower than this bends the SHOULD of a prompt close


async def _expect_close_1000(conv: Conversation, sent_at: float) -> Outcome:
    try:
        closed = await conv.wait_closed(max(conv.silence, 2 * PROMPT_CLOSE_S))
    except CaseFailed as exc:
        raise CaseFailed(f"close request ignored: {exc.detail}", expected="close 1000",
                         actual="still open") from None
    elapsed = time.perf_counter() - sent_at
    if closed.code != 1000:
        shown = "no close frame (code 1006)" if closed.code is None else f"wrong close code {closed.code}"
        raise CaseFailed(f"{shown} after a close request: the container {describe_close(closed)}",
                         expected="1000", actual=str(closed.code))
    conv.raise_violations()
    if elapsed > PROMPT_CLOSE_S:
        return non_strict(f"closed with 1000, but only after {elapsed:.1f} s")
    return ok(f"closed with 1000 after {elapsed * 1000:.0f} ms")


@case("close.explicit.1", '{"type": "close"} on an idle session closes with 1000',
      clauses=["TTS-CLOSE"], expect="close frame 1000, promptly")
async def explicit_close(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    await conv.say(TINY, lenient=True)
    await conv.close_request()
    return await _expect_close_1000(conv, time.perf_counter())


@case("close.explicit.2", '{"type": "close"} in a BINARY frame closes with 1000',
      clauses=["TTS-CLOSE", "TTS-BINARY-IN"], expect="close frame 1000")
async def explicit_close_binary(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    await conv.close_request(kind=FrameKind.BINARY)
    return await _expect_close_1000(conv, time.perf_counter())


# Three sentences: long enough to be still in synthesis when the close follows its first sign of work.
CLOSE_TEXT = ("The morning train was late again. A child counted the pigeons on the platform. Her father read "
              "the timetable twice.")


@case("close.synthesizing.1", "close while synthesizing: the current message is finished, then 1000",
      clauses=["TTS-CLOSE", "TTS-ORDER"],
      expect="the close sent at the message's first sign of work (or after 2x a 'Hi.' alone): synthesis_complete "
             "of the message, then close 1000; NOT-JUDGED when the message had ended before the close was sent")
async def close_while_synthesizing(ctx: CaseContext) -> Outcome:
    alone = await _tiny_first_audio_s(ctx, warm=True)
    conv = await ctx.conversation()
    rid = await conv.synthesize(CLOSE_TEXT)
    # The close goes at the first sign of work (synthesis_start, or audio where there is none), or after
    # 2x a 'Hi.' alone, whichever is first: for a container that says nothing until its whole message is
    # made, its first sign is its end, and a close sent then would not arrive mid-synthesis at all.
    reply = await first_sign_of_work(conv, rid, 2 * alone + 0.05, expected="synthesis_complete")
    await conv.pump_until(lambda: reply.record.done, silence=0.02, total=0.05)  # what had already arrived
    if reply.record.done:
        return not_judged("the message had ended before the close could be sent (its first sign of work was its "
                          "end): the situation (a close arriving mid-synthesis) did not occur")
    await conv.close_request()
    sent = time.perf_counter()
    try:
        reply = await conv.wait_reply(rid)
    except CaseFailed as exc:
        how = f"the container {describe_close(conv.closed)}" if conv.closed else "the session stayed open"
        raise CaseFailed(f"the message in progress was not finished after the close request ({how}): "
                         f"{exc.detail}", expected="synthesis_complete, then close 1000", actual=how) from None
    if reply.error is not None:
        raise CaseFailed(f"the message was refused with error {reply.error.code or '(no code)'}",
                         expected="synthesis_complete", actual=f"error {reply.error.code or '(no code)'}")
    frames = reply.record.frame_times
    ended = reply.record.completed_at or (frames[-1] if frames else sent)
    if ended <= sent + 0.02:  # its end was already on the way when the close left
        return not_judged(f"the message ended {(ended - reply.record.sent_at) * 1000:.0f} ms after it was sent, "
                          f"with the close at {(sent - reply.record.sent_at) * 1000:.0f} ms: its end was already "
                          "on the way, so the situation (a close arriving mid-synthesis) did not occur")
    # The close is due once the message is finished: time it from synthesis_complete, not from the
    # request (the synthesis in between is work the contract asks for).
    outcome = await _expect_close_1000(conv, ended)
    shown = (f"the close sent {(sent - reply.record.sent_at) * 1000:.0f} ms after the message, "
             f"{(ended - sent) * 1000:.0f} ms before its end; finished {len(reply.audio)} bytes, then 1000")
    return outcome if outcome.verdict != "OK" else ok(shown)


async def _tiny_first_audio_s(ctx: CaseContext, *, warm: bool) -> float:
    if warm:  # on a session of its own: a second message is session.*'s business
        await (await ctx.conversation()).say(TINY, lenient=True)
    conv = await ctx.conversation()
    reply = await conv.say(TINY, lenient=True)
    await conv.close()
    assert reply.record.ttfa_s is not None
    return reply.record.ttfa_s


@case("close.client.1", "the client closes mid-synthesis; the container stops that work and serves a new "
      "session at once", clauses=["TTS-SESSION", "TTS-ISOLATION"],
      expect="the client leaves at the message's synthesis_start (or after 2 sentences' time); the next "
             "session's first audio within 2x (one sentence's first audio + its own alone) + 0.25 s; "
             "NOT-JUDGED when the message had ended first")
async def client_close(ctx: CaseContext) -> Outcome:
    alone = await _tiny_first_audio_s(ctx, warm=True)
    text = long_text(400)
    # How long one unit of work takes (the container may finish the sentence in progress): the text's
    # first sentence alone, on a session of its own.
    piece = await (await ctx.conversation()).say(split_sentences(text)[0], lenient=True)
    one_piece = piece.record.ttfa_s or alone
    first = await ctx.conversation(patience=sentences(text) / 2)
    rid = await first.synthesize(text)
    # Leave at the first sign of work (synthesis_start, or audio where there is none), or after two
    # sentences' time, whichever is first: a container that sends all its audio at the end has finished
    # by its first audio, and the client would not leave mid-synthesis at all.
    reply = await first_sign_of_work(first, rid, 2 * one_piece + 0.05, message=f"a {len(text)}-character message")
    await first.pump_until(lambda: reply.record.done, silence=0.02)  # what had already arrived
    when = "at its first sign of work" if reply.answered else "before any answer"
    left_at = time.perf_counter()
    ended = reply.record.done
    await first.close()
    if ended:
        return not_judged("the message had ended before the client could leave (its first sign of work was "
                          "its end): the situation (a client leaving mid-synthesis) did not occur")
    try:
        after = await _tiny_first_audio_s(ctx, warm=False)
    except CaseFailed as exc:
        raise CaseFailed(f"after a client left mid-message, a new session failed: {exc.detail}",
                         expected="a new session served at once", actual=exc.actual) from None
    limit = 2 * (one_piece + alone) + 0.25
    shown = (f"'Hi.' first audio {after * 1000:.0f} ms after a client left mid-message "
             f"({when}, {(left_at - reply.record.sent_at) * 1000:.0f} ms after sending {sentences(text)} sentences), "
             f"{alone * 1000:.0f} ms alone; one sentence alone took {one_piece * 1000:.0f} ms to its first audio")
    if after > limit:
        raise CaseFailed(f"the new session waited for the abandoned message: {shown}",
                         expected=f"first audio within {limit * 1000:.0f} ms", actual=shown)
    return ok(shown)


@case("close.after.1", "a message sent after {\"type\": \"close\"} is not started", clauses=["TTS-CLOSE"],
      expect="nothing of the message sent after the close request, then a close")
async def nothing_after_close(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    first = await conv.synthesize(SENTENCE)
    await conv.close_request()
    late = await conv.synthesize(TINY)
    try:
        closed = await conv.wait_closed(max(conv.silence, 2 * PROMPT_CLOSE_S) * 2)
    except CaseFailed as exc:
        raise CaseFailed(f"no close after a close request with a message behind it: {exc.detail}",
                         expected="close 1000", actual="still open") from None
    if conv.replies[late].answered:
        started = conv.replies[late].started is not None or bool(conv.replies[late].audio)
        what = "synthesized" if started else "answered"
        raise CaseFailed(f"a message sent after the close request was {what} before the close",
                         expected="nothing of the later message, then close 1000", actual=f"the later message {what}")
    # The close code is close.explicit.*'s business; finishing the message in progress, close.synthesizing.1's.
    shown = "finished" if conv.replies[first].record.done else "ended"
    return ok(f"{shown} the message in progress, ignored the later one, then {describe_close(closed)}")
