"""frames.*: how a message may arrive: BINARY or TEXT, fragmented, short, long, non-ASCII, minimal."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from bidi_tts.chunker import split_sentences
from bidi_tts.frames import FrameKind
from bidi_tts.protocol import CHANNELS, DEFAULT_SAMPLE_RATE, ENCODING, SynthesizeRequest
from bidi_tts_conformance.cases._util import SHORT, TINY
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.diagnose import describe_close
from bidi_tts_conformance.driver import Reply
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, case, ok

UNICODE_TEXT = "Café déjà vu: the naïve façade served crème brûlée — “quoted” too."
# Short sentences (at most about 60 characters, like every text of the suite): the time a container
# needs for its longest unit of work bounds the silence the suite must allow, so no case text is longer.
LONG_PARAGRAPH = (
    "The morning train was late again. The station filled with people. They checked their phones "
    "and sighed. A child counted the pigeons on the platform. Her father read the timetable twice. "
    "Somewhere a radio played an old song about the sea. At last the train came around the bend. "
    "Everyone pressed forward at once. The conductor smiled as if he had seen it all before. "
)


def sentences(text: str) -> int:
    return max(1, len(split_sentences(text)))


def long_text(min_chars: int = 1_100) -> str:
    text = ""
    while len(text) < min_chars:
        text += LONG_PARAGRAPH
    return text.strip()


async def handled(ctx: CaseContext, kind: FrameKind | None, text: str = SHORT, *, patience: float = 1.0,
                  read_to_end: bool = True, **send: Any) -> Reply:
    """Send one message on a new session and judge it at the first sign that it was synthesized
    (synthesis_start or audio); an error or silence fails. How the answer ends (order, totals,
    synthesis_complete) is other cases' business: with `read_to_end` the rest is read, but never
    judged, so that the session is not left mid-message. A long message gets more `patience`: a
    container that does not stream (another case's business) needs longer for its first audio."""
    conv = await ctx.conversation(patience=patience)
    rid = await conv.synthesize(text, kind=kind, **send)
    reply = await conv.wait_answer(rid)
    if reply.error is not None:
        raise CaseFailed(f"refused with error {reply.error.code or '(no code)'}", expected="synthesis",
                         actual=f"error {reply.error.code or '(no code)'}")
    if not reply.answered:
        assert conv.closed is not None
        raise CaseFailed(f"the container {describe_close(conv.closed)} without answering; received: "
                         f"{conv.received()}", expected="synthesis", actual=describe_close(conv.closed))
    await conv.pump_until(lambda: bool(reply.audio) or reply.record.done)
    if read_to_end and not reply.record.done:
        await conv.pump_until(lambda: reply.record.done, silence=conv.end_silence, total=4 * conv.silence)
    return reply


async def _attempt(ctx: CaseContext, kind: FrameKind | None, text: str = SHORT) -> tuple[Reply | None, str]:
    try:
        return await handled(ctx, kind, text), ""
    except CaseFailed as exc:
        return None, exc.detail


async def _kind_case(ctx: CaseContext, kind: FrameKind) -> Outcome:
    other = FrameKind.TEXT if kind is FrameKind.BINARY else FrameKind.BINARY
    reply, detail = await _attempt(ctx, kind)
    if reply is not None:
        return ok(f"synthesis_start and {len(reply.audio)} audio bytes")
    other_reply, other_detail = await _attempt(ctx, other)
    name = kind.value
    if other_reply is not None:
        raise CaseFailed(
            f"{name} frame not handled: the same message in a {other.value.upper()} frame was synthesized, "
            f"in a {name.upper()} frame: {detail}",
            expected=f"the message in a {name.upper()} frame is handled like the {other.value.upper()} one",
            actual=detail)
    raise CaseFailed(f"no message was handled, in a {name.upper()} frame: {detail}; in a "
                     f"{other.value.upper()} frame: {other_detail}", expected="synthesis", actual=detail)


@case("frames.binary.1", "one synthesize message in a BINARY frame (what SageMaker delivers by default)",
      clauses=["TTS-BINARY-IN", "SM-FRAMES-IN"], expect="synthesis_start, audio, synthesis_complete")
async def binary_message(ctx: CaseContext) -> Outcome:
    return await _kind_case(ctx, FrameKind.BINARY)


@case("frames.text.1", "one synthesize message in a TEXT frame (DataType=UTF8)",
      clauses=["TTS-BINARY-IN", "SM-FRAMES-IN"], expect="synthesis_start, audio, synthesis_complete")
async def text_message(ctx: CaseContext) -> Outcome:
    return await _kind_case(ctx, FrameKind.TEXT)


async def _fragmented(ctx: CaseContext, kind: FrameKind, text: str, inside_utf8: bool) -> Outcome:
    body = SynthesizeRequest(text=text, voice=ctx.options.voice,
                             sample_rate=ctx.options.sample_rate).to_json().encode("utf-8")
    if inside_utf8:
        first_multibyte = next(i for i, b in enumerate(body) if b >= 0xC0)
        cuts = [first_multibyte + 1, len(body) * 2 // 3]
    else:
        cuts = [len(body) // 3, len(body) * 2 // 3]
    try:  # the exact same JSON, split at those byte offsets
        reply = await handled(ctx, kind, text, payload=json.loads(body), split_at=cuts)
    except CaseFailed as exc:
        whole, _ = await _attempt(ctx, kind, text)
        if whole is not None:
            raise CaseFailed(f"fragmented {kind.value.upper()} message not handled (the same message in one "
                             f"frame works): {exc.detail}", expected="the reassembled message is synthesized",
                             actual=exc.actual) from None
        raise
    return ok(f"{len(cuts) + 1} fragments: synthesis_start and {len(reply.audio)} audio bytes")


@case("frames.fragmented.1", "a message fragmented into 3 TEXT frames (continuations)",
      clauses=["SM-FRAMES-IN", "TTS-BINARY-IN"], expect="handled like the whole message")
async def fragmented_text(ctx: CaseContext) -> Outcome:
    return await _fragmented(ctx, FrameKind.TEXT, SHORT, inside_utf8=False)


@case("frames.fragmented.2", "a message fragmented into 3 BINARY frames (PARTIAL, PARTIAL, COMPLETE)",
      clauses=["SM-FRAMES-IN", "TTS-BINARY-IN"], expect="handled like the whole message")
async def fragmented_binary(ctx: CaseContext) -> Outcome:
    return await _fragmented(ctx, FrameKind.BINARY, SHORT, inside_utf8=False)


@case("frames.fragmented.3", "a TEXT message fragmented inside a UTF-8 sequence",
      clauses=["SM-FRAMES-IN"], expect="UTF-8 checked on the reassembled message; synthesized")
async def fragmented_text_utf8(ctx: CaseContext) -> Outcome:
    return await _fragmented(ctx, FrameKind.TEXT, "Café au lait.", inside_utf8=True)


@case("frames.fragmented.4", "a BINARY message fragmented inside a UTF-8 sequence",
      clauses=["SM-FRAMES-IN", "TTS-BINARY-IN"], expect="decoded once whole; synthesized")
async def fragmented_binary_utf8(ctx: CaseContext) -> Outcome:
    return await _fragmented(ctx, FrameKind.BINARY, "Café au lait.", inside_utf8=True)


@case("frames.short.1", "a very short message: 'Hi.'",
      clauses=["TTS-ORDER", "TTS-AUDIO"], expect="synthesis with some audio")
async def very_short(ctx: CaseContext) -> Outcome:
    reply = await handled(ctx, FrameKind.TEXT, TINY)
    if not reply.audio:
        raise CaseFailed("no audio for 'Hi.'", expected="audio", actual="0 bytes")
    return ok(f"{len(reply.audio)} audio bytes")


@case("frames.long.1", "a long message (> 1,000 characters) is accepted",
      clauses=["TTS-ERROR", "TTS-SESSION"],
      expect="no text_too_long: synthesis_start then audio")
async def long_message(ctx: CaseContext) -> Outcome:
    text = long_text()
    try:
        reply = await handled(ctx, FrameKind.TEXT, text, patience=sentences(text) / 2, read_to_end=False)
    except CaseFailed as exc:
        raise CaseFailed(f"a {len(text)}-character message was not accepted: {exc.detail}",
                         expected="at least 1,000 characters accepted", actual=exc.actual) from None
    # The client now leaves mid-message: whether that hurts the next session is close.client.1's business.
    return ok(f"{len(text)} characters: synthesis_start and {len(reply.audio)} audio bytes")


@case("frames.unicode.1", "non-ASCII text (accents, typographic quotes, dashes)",
      clauses=["TTS-BINARY-IN", "TTS-AUDIO"], expect="synthesized like ASCII text")
async def unicode_text(ctx: CaseContext) -> Outcome:
    reply = await handled(ctx, FrameKind.TEXT, UNICODE_TEXT)
    return ok(f"synthesis_start and {len(reply.audio)} audio bytes")


@case("frames.minimal.1", "a message with only 'text' (defaults for voice, speed, sample_rate, type)",
      clauses=["TTS-AUDIO"], expect="synthesis_start announcing 24000 Hz, pcm_s16le, 1 channel")
async def minimal_message(ctx: CaseContext) -> Outcome:
    reply = await handled(ctx, FrameKind.TEXT, SHORT, payload={"text": SHORT}, sample_rate=DEFAULT_SAMPLE_RATE)
    if reply.started is None:
        raise CaseFailed("audio arrived without synthesis_start", expected="synthesis_start first",
                         actual="audio first")
    start = reply.started.control
    wanted = {"sample_rate": DEFAULT_SAMPLE_RATE, "encoding": ENCODING, "channels": CHANNELS}
    # A field missing from synthesis_start is audio.format.1's business; here: the values announced.
    wrong = {k: start[k] for k, v in wanted.items() if k in start and start[k] != v}
    if wrong:
        shown = ", ".join(f"{k} {json.dumps(v)}" for k, v in wrong.items())
        raise CaseFailed(f"the defaults announced in synthesis_start are wrong: {shown}",
                         expected="sample_rate 24000, encoding pcm_s16le, channels 1", actual=shown)
    missing = [k for k in wanted if k not in start]
    if missing:
        ctx.notes.add(f"TTS-AUDIO: synthesis_start does not announce {', '.join(missing)} (judged by audio.format.1)")
    return ok()


@case("frames.unknown_fields.1", "unknown fields (request_timestamp, nested objects) are ignored",
      clauses=["TTS-BINARY-IN"], expect="synthesized as if the fields were absent")
async def unknown_fields(ctx: CaseContext) -> Outcome:
    rid = uuid.uuid4().hex
    payload = {"text": SHORT, "request_id": rid, "voice": ctx.options.voice,
               "request_timestamp": time.time(), "client": {"name": "conformance", "v": [1, 2]}}
    reply = await handled(ctx, FrameKind.TEXT, SHORT, payload=payload)
    return ok(f"synthesis_start and {len(reply.audio)} audio bytes")
