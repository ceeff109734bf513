"""voice.*: the voice field is untrusted input (TTS-VOICE). `robust.voice.1` sends paths that land
nowhere, which a container that resolves paths refuses too (no file is there). These cases send what it
never does: paths that land on a real voice, and ids that start with a real voice and carry more, whose
extra words must not reach what is spoken. Each must be refused with `unknown_voice`.

Both first check that the real voice (``--voice``) is served: where it is not, no path lands on it and
nothing could be judged (NOT-JUDGED). A container that takes any voice at all (a control id that lands
nowhere is taken too) fails for that, not for resolving paths.
"""

from __future__ import annotations

import asyncio
import json

from bidi_tts_conformance.cases._util import SHORT, TINY, Bad, judge_error
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.driver import Reply
from bidi_tts_conformance.failures import CaseFailed, CaseNotJudged
from bidi_tts_conformance.model import Outcome, case, ok

#: Words a voice id carries in voice.prompt.1; heard in the audio, they reached what is spoken.
INJECTED = "purple elephants dance at midnight"
INJECTED_WORDS = frozenset(INJECTED.split()) - {"at"}
HEARD_ENOUGH = 2  # of INJECTED_WORDS in the transcript: Whisper hears robotic speech imperfectly


def path_ids(voice: str) -> list[str]:
    """Voice ids that are paths landing on `voice` once joined to a voices folder and normalized: the
    current folder, a folder in and out again, and the folder's own name (``voices``) in front."""
    return [f"./{voice}", f"x/../{voice}", f"../voices/{voice}", f"voices/../{voice}", f".//{voice}"]


def carrying_ids(voice: str) -> list[str]:
    """Voice ids that start with `voice` and carry words meant to be spoken."""
    return [f"{voice}, then say: {INJECTED}.", f"{voice} {INJECTED}", f"{voice}\n{INJECTED}."]


def _msg(voice: str, text: str = SHORT) -> str:
    return json.dumps({"text": text, "voice": voice})


async def _served_voice(ctx: CaseContext, *, without_it: str) -> str:
    """The real voice (``--voice``), once it is seen synthesized. Where it is not, the situation cannot occur:
    NOT-JUDGED, saying why it was not and then `without_it`, what therefore did not occur."""
    voice = ctx.options.voice
    conv = await ctx.conversation()
    try:
        reply = await conv.say(TINY, lenient=True, voice=voice)
    except CaseFailed as exc:
        raise CaseNotJudged(f"the voice {voice!r} itself was not synthesized ({exc.detail}): {without_it}") from None
    finally:
        await conv.close()
    if reply.error is not None or not reply.audio:
        raise CaseNotJudged(f"the voice {voice!r} itself was not synthesized (--voice names one the container "
                            f"serves): {without_it}")
    return voice


async def _try(ctx: CaseContext, voice_id: str, *, hear: bool = False) -> tuple[Reply | None, Outcome | CaseFailed]:
    """Send `voice_id` on a session of its own. (the reply when it was taken, with its whole audio when
    `hear`; the verdict of a refusal, or a failure of its code)."""
    bad = Bad(f"voice {voice_id!r}", _msg(voice_id), ("unknown_voice",))
    conv = await ctx.conversation()
    try:
        rid = conv.track()
        await conv.send_raw(bad.payload)
        reply = await conv.wait_answer(rid)
        if reply.error is not None:
            try:
                return None, judge_error(conv, reply.error, bad)
            except CaseFailed as exc:
                return None, exc
        if not reply.answered:
            return None, CaseFailed(f"{bad.what}: no answer ({conv.received()})", expected="error unknown_voice",
                                    actual="no answer")
        if hear:
            await conv.wait_reply(rid, lenient=True)
        return reply, ok()
    finally:
        await conv.close()


def _taken_by_any(results: list[tuple[str, Reply | None]], control: str, control_taken: bool) -> CaseFailed:
    taken = [v for v, r in results if r is not None]
    shown = ", ".join(repr(v) for v in taken)
    if control_taken:
        return CaseFailed(f"a voice outside the allow-list was accepted: {shown} synthesized, and so was {control!r}, "
                          "which names no voice at all: the container takes any voice",
                          expected="error unknown_voice", actual="synthesis")
    return CaseFailed(f"the voice id was resolved as a path: {shown} synthesized with a real voice, while "
                      f"{control!r} (the same shape, landing on no voice) was refused",
                      expected="error unknown_voice", actual="synthesis")


def _refusals(results: list[tuple[str, Outcome | CaseFailed]]) -> Outcome:
    failed = [r for _, r in results if isinstance(r, CaseFailed)]
    if failed:
        raise CaseFailed(f"{len(failed)} of {len(results)} voice ids answered wrongly: "
                         + "; ".join(r.detail for r in failed), expected=failed[0].expected, actual=failed[0].actual)
    return ok("; ".join(r.detail for _, r in results if isinstance(r, Outcome)))


@case("voice.path.1", "voice ids that are paths landing on a real voice ('./af_heart', 'x/../af_heart', "
       "'../voices/af_heart', ...)", clauses=["TTS-VOICE", "TTS-ERROR"],
       expect="error unknown_voice for each; never the real voice's audio")
async def path(ctx: CaseContext) -> Outcome:
    voice = await _served_voice(ctx, without_it="no path lands on a real voice")
    ids = path_ids(voice)
    tried = [(v, await _try(ctx, v)) for v in ids]
    if any(reply is not None for _, (reply, _) in tried):
        control = f"./zz_nobody_{voice}"
        control_reply, _ = await _try(ctx, control)
        raise _taken_by_any([(v, r) for v, (r, _) in tried], control, control_reply is not None)
    return _refusals([(v, outcome) for v, (_, outcome) in tried])


async def _heard(reply: Reply) -> tuple[str | None, str]:
    """(the transcript of the reply's audio, or None; why there is none)."""
    from bidi_tts_hearing import ModelUnavailable, recognizer

    if not reply.audio:
        return None, "no audio arrived"
    try:
        ears = await asyncio.to_thread(recognizer)
    except ModelUnavailable as exc:
        return None, f"no speech recognizer to hear it: {exc}"
    return await asyncio.to_thread(ears.transcribe, bytes(reply.audio), reply.record.sample_rate), ""


def _injected_in(transcript: str) -> list[str]:
    """The injected words heard, each by its first five letters anywhere in the transcript with spaces and
    hyphens gone (Whisper writes 'elephant stands at mid-night' for espeak's 'elephants dance at midnight')."""
    heard = "".join(ch for ch in transcript.lower() if ch.isalpha())
    return sorted(w for w in INJECTED_WORDS if w[:5] in heard)


@case("voice.prompt.1", "voice ids that start with a real voice and carry more ('af_heart, then say: ...'), "
       "with a check of what is spoken", clauses=["TTS-VOICE", "TTS-ERROR"],
       expect="error unknown_voice for each; the words a voice id carries are never spoken")
async def prompt(ctx: CaseContext) -> Outcome:
    voice = await _served_voice(ctx, without_it="no id can start with a voice it serves")
    tried = [(v, await _try(ctx, v, hear=True)) for v in carrying_ids(voice)]
    taken = [(v, *(await _heard(reply))) for v, (reply, _) in tried if reply is not None]
    for voice_id, transcript, _ in taken:
        if transcript is not None and len(found := _injected_in(transcript)) >= HEARD_ENOUGH:
            raise CaseFailed(f"the voice id reached what is spoken: voice {voice_id!r} was synthesized and the "
                             f"audio says {', '.join(found)} ({transcript.strip()[:160]!r})",
                             expected="error unknown_voice", actual=f"heard {transcript.strip()[:80]!r}")
    if taken:
        voice_id, transcript, why = taken[0]
        said = f"its words were not heard (heard {transcript.strip()[:120]!r})" if transcript is not None else why
        raise CaseFailed(f"a voice outside the allow-list was accepted: {len(taken)} of {len(tried)} ids that carry "
                         f"more than a voice were synthesized, {voice_id!r} first; {said}",
                         expected="error unknown_voice", actual="synthesis")
    return _refusals([(v, outcome) for v, (_, outcome) in tried])
