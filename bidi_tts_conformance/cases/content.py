"""content.*: hear what the container says (offline speech recognition) and check it is what was sent.

A container can stream well-formed, loud, plausibly long audio that says the wrong thing: the previous
message again, a sentence dropped or out of order, the end cut off, another session's words. These
cases transcribe the audio with the recognizer of bidi_tts_hearing (faster-whisper, Whisper base,
offline) and name the cause. Thresholds and costs: docs/content.md.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.driver import Reply
from bidi_tts_conformance.failures import CaseFailed, CaseSkipped
from bidi_tts_conformance.model import Outcome, case, ok
from bidi_tts_hearing import ModelUnavailable, Recognizer, recognizer, transcribe_each

if TYPE_CHECKING:  # the judgement needs the 'hearing' extra; it is imported once a recognizer loaded
    from bidi_tts_hearing.alignment import Hearing

# Robotic but correct speech (espeak-ng) comes back with up to about a quarter of the words wrong;
# speech with every other word wrong comes back near 0.5 and worse (docs/content.md).
MAX_WER = 0.35

INTELLIGIBLE = ["The garden is full of yellow flowers.", "We will meet again next Sunday morning."]
ORDER = ["My brother plays the piano.", "The kitchen door is open.", "She bought a new red car.",
         "It was a very cold winter."]
SESSION = ["The children are playing football.", "Please close the window.", "We ate fresh bread for dinner."]
CONCURRENT = ["The old man reads a book.", "Turn left at the bank.", "The river is deep and wide."]


async def _recognizer() -> Recognizer:
    """The process's recognizer, loaded once off the event loop; skips the case where it is missing."""
    try:
        return await asyncio.to_thread(recognizer)
    except ModelUnavailable as exc:
        raise CaseSkipped(f"no speech recognizer: {exc}") from None


async def _say_and_hear(ctx: CaseContext, sentences: list[str]) -> tuple[Reply, Hearing]:
    """Say `sentences` as one message on a session of its own; the reply and what its audio was heard to say
    (the case is skipped before anything is sent where there is no recognizer)."""
    ears = await _recognizer()  # first: without the hearing extra, bidi_tts_hearing.alignment cannot import
    from bidi_tts_hearing.alignment import hear

    conv = await ctx.conversation()
    reply = await conv.say(" ".join(sentences), lenient=True)
    heard = await asyncio.to_thread(ears.transcribe, bytes(reply.audio), reply.record.sample_rate)
    return reply, hear(sentences, heard)


def _misfit(transcript: str, texts: list[str]) -> float:
    """How far a transcript is from the closest of `texts` (share of that text's words wrong)."""
    from bidi_tts_hearing.alignment import locate
    from bidi_tts_hearing.text import words

    return min(locate(words(t), words(transcript)).error_rate for t in texts)


def _not_cut(reply: Reply, label: str = "the message") -> None:
    """Fail when the audio stops mid-sound (judged on the audio, not on the recognizer, which completes
    a cut-off sentence from context)."""
    from bidi_tts_hearing.ending import ending

    end = ending(reply.audio, reply.record.sample_rate)
    if end is not None and end.cut:
        raise CaseFailed(f"{label}: {end.describe()}", expected="speech that ends in a decay to silence",
                         actual=f"the last 20 ms at {end.tail_db:.0f} dB of the speech")


async def _hear_each(ears: Recognizer, replies: list[Reply], texts: list[str], label: str) -> None:
    """Fail naming the first reply whose audio does not say its own text, or says another's."""
    from bidi_tts_hearing.alignment import hear

    clips = [(bytes(r.audio), r.record.sample_rate) for r in replies]
    transcripts = await asyncio.to_thread(transcribe_each, ears, clips)
    for n, (text, transcript) in enumerate(zip(texts, transcripts, strict=True), 1):
        _not_cut(replies[n - 1], f"{label} {n} of {len(texts)}")
        others = {f"{label} {k}": t for k, t in enumerate(texts, 1) if k != n}
        heard = hear([text], transcript, others)
        if not heard.ok:  # confirm on the clip alone: Whisper may skip a clip that repeats its neighbour
            alone = hear([text], await asyncio.to_thread(ears.transcribe, *clips[n - 1]), others)
            # Of two failing transcripts, keep the one closer to some known text (its own or another's):
            # the other is a skipped clip or a guess at cut-off speech.
            heard = min(heard, alone, key=lambda h: (not h.ok, _misfit(h.heard, texts)))
        if not heard.ok:
            raise CaseFailed(f"{label} {n} of {len(texts)}: {heard.describe()}", expected=text, actual=heard.heard)


@case("content.intelligible.1", "a two-sentence message says its words: normalized word error rate of the "
      "transcript (offline Whisper base)", clauses=["TTS-AUDIO"],
      expect=f"word error rate <= {MAX_WER} (case, punctuation and numbers normalized); the audio does not "
      "stop mid-sound")
async def intelligible(ctx: CaseContext) -> Outcome:
    reply, heard = await _say_and_hear(ctx, INTELLIGIBLE)
    if heard.wer > MAX_WER:
        raise CaseFailed(f"wrong words: word error rate {heard.wer:.2f} > {MAX_WER}: {heard.describe()}",
                         expected=" ".join(INTELLIGIBLE), actual=heard.heard)
    _not_cut(reply)
    return ok(f"WER {heard.wer:.2f} over {reply.record.audio_seconds:.1f} s: heard {heard.heard!r}")


@case("content.order.1", "the sentences of one message are all spoken, once each, in order, to the end",
      clauses=["TTS-ORDER", "TTS-AUDIO"],
      expect="each of 4 sentences heard exactly once, in the order sent; the last words not cut off")
async def order(ctx: CaseContext) -> Outcome:
    reply, heard = await _say_and_hear(ctx, ORDER)
    _not_cut(reply)  # before the words: a cut end is the failure to name, whatever was heard
    if not heard.ok:
        raise CaseFailed(f"the sentences are not spoken as sent: {heard.describe()}",
                         expected=" ".join(ORDER), actual=heard.heard)
    return ok(f"4 sentences in order, WER {heard.wer:.2f}")


@case("content.session.1", "in a session of 3 messages, message N's audio says message N's words",
      clauses=["TTS-ORDER", "TTS-SESSION"],
      expect="each message's transcript has its own words and none of the other messages'")
async def session(ctx: CaseContext) -> Outcome:
    ears = await _recognizer()
    conv = await ctx.conversation()
    replies = [await conv.say(text, lenient=True) for text in SESSION]
    await _hear_each(ears, replies, SESSION, "message")
    return ok(f"{len(SESSION)} messages, each with its own words")


@case("content.concurrent.1", "3 concurrent sessions with different texts each hear their own words",
      clauses=["TTS-ISOLATION"],
      expect="each session's transcript has its own words and none of the other sessions'")
async def concurrent(ctx: CaseContext) -> Outcome:
    ears = await _recognizer()
    convs = [await ctx.conversation(patience=len(CONCURRENT)) for _ in CONCURRENT]
    replies = await asyncio.gather(*(c.say(t, lenient=True) for c, t in zip(convs, CONCURRENT, strict=True)))
    await _hear_each(ears, list(replies), CONCURRENT, "session")
    return ok(f"{len(CONCURRENT)} concurrent sessions, each with its own words")
