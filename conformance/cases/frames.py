"""frames.*: how a message may arrive: BINARY or TEXT, fragmented, short, long, non-ASCII, minimal."""

from __future__ import annotations

import time
import uuid

from bidi_tts.frames import FrameKind
from bidi_tts.protocol import DEFAULT_SAMPLE_RATE
from bidi_tts.transports.base import TransportTimeout
from conformance.cases._util import SHORT, TINY
from conformance.context import CaseContext
from conformance.driver import Reply
from conformance.model import CaseFailed, Outcome, case, non_strict, ok

UNICODE_TEXT = "Café déjà vu: the naïve façade served crème brûlée — “quoted” too."
LONG_PARAGRAPH = (
    "The morning train was late again, so the station filled with people who checked their phones and "
    "sighed. A child counted the pigeons on the platform while her father read the timetable twice. "
    "Somewhere a radio played an old song about the sea. When the train finally arrived, everyone "
    "pressed forward at once, and the conductor smiled as if he had seen it all before. "
)


def long_text(min_chars: int = 1_100) -> str:
    text = ""
    while len(text) < min_chars:
        text += LONG_PARAGRAPH
    return text.strip()


async def _attempt(ctx: CaseContext, kind: FrameKind | None, text: str = SHORT) -> tuple[Reply | None, str]:
    conv = await ctx.conversation()
    try:
        return await conv.say(text, kind=kind), ""
    except CaseFailed as exc:
        return None, exc.detail
    finally:
        await conv.close()


async def _kind_case(ctx: CaseContext, kind: FrameKind) -> Outcome:
    other = FrameKind.TEXT if kind is FrameKind.BINARY else FrameKind.BINARY
    reply, detail = await _attempt(ctx, kind)
    if reply is not None:
        return ok(f"{len(reply.audio)} audio bytes")
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
    conv = await ctx.conversation()
    body = conv.request(text).to_json().encode("utf-8")
    if inside_utf8:
        first_multibyte = next(i for i, b in enumerate(body) if b >= 0xC0)
        cuts = [first_multibyte + 1, len(body) * 2 // 3]
    else:
        cuts = [len(body) // 3, len(body) * 2 // 3]
    # Re-send the exact same JSON, split at those byte offsets.
    import json

    rid = await conv.synthesize(text, kind=kind, payload=json.loads(body), split_at=cuts)
    try:
        reply = await conv.complete(rid)
    except CaseFailed as exc:
        whole = await _attempt(ctx, kind, text)
        if whole[0] is not None:
            raise CaseFailed(f"fragmented {kind.value.upper()} message not handled (the same message in one "
                             f"frame works): {exc.detail}", expected="the reassembled message is synthesized",
                             actual=exc.actual) from None
        raise
    return ok(f"{len(cuts) + 1} fragments, {len(reply.audio)} audio bytes")


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
    conv = await ctx.conversation()
    reply = await conv.say(TINY)
    if not reply.audio:
        raise CaseFailed("no audio for 'Hi.'", expected="audio", actual="0 bytes")
    return ok(f"{len(reply.audio)} audio bytes")


@case("frames.long.1", "a long message (> 1,000 characters) is accepted and streamed",
      clauses=["TTS-ORDER", "TTS-STREAM"],
      expect="no text_too_long; synthesis_start then audio (the client then disconnects; a new session "
             "is served)")
async def long_message(ctx: CaseContext) -> Outcome:
    text = long_text()
    conv = await ctx.conversation()
    rid = await conv.synthesize(text)
    reply = conv.replies[rid]
    deadline = time.perf_counter() + ctx.options.reply_timeout
    target_bytes = 2 * ctx.options.sample_rate  # one second of audio is proof enough
    while len(reply.audio) < target_bytes and not reply.record.done:
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        try:
            await conv.pump(left)
        except TransportTimeout:
            break
    if reply.error is not None:
        raise CaseFailed(f"a {len(text)}-character message was refused with {reply.error.code!r}",
                         expected="at least 1,000 characters accepted", actual=str(reply.error.code))
    conv.raise_violations()
    if not reply.audio:
        raise CaseFailed(f"no audio within {ctx.options.reply_timeout:.0f} s for a {len(text)}-character "
                         f"message; received: {'; '.join(conv.log[-3:]) or 'nothing'}",
                         expected="streamed audio", actual="no audio")
    done = reply.record.done
    await conv.close()
    # Disconnecting mid-message must not hurt the next session.
    nxt = await ctx.conversation()
    await nxt.say(TINY)
    state = "completed" if done else "streaming when the client disconnected"
    return ok(f"{len(text)} characters: {len(reply.audio)} audio bytes, {state}")


@case("frames.unicode.1", "non-ASCII text (accents, typographic quotes, dashes)",
      clauses=["TTS-ORDER", "TTS-AUDIO"], expect="synthesized like ASCII text")
async def unicode_text(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    reply = await conv.say(UNICODE_TEXT)
    return ok(f"{len(reply.audio)} audio bytes")


@case("frames.minimal.1", "a message with only 'text' (defaults for voice, speed, sample_rate, type)",
      clauses=["TTS-ORDER", "TTS-AUDIO"], expect="synthesis_start announcing 24000 Hz pcm_s16le mono")
async def minimal_message(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rid = await conv.synthesize(SHORT, payload={"text": SHORT}, sample_rate=DEFAULT_SAMPLE_RATE)
    reply = await conv.complete(rid)
    assert reply.started is not None
    start = reply.started.control
    if start.get("sample_rate") != DEFAULT_SAMPLE_RATE:
        raise CaseFailed(f"default sample_rate announced as {start.get('sample_rate')!r}",
                         expected="24000", actual=repr(start.get("sample_rate")))
    return ok()


@case("frames.unknown_fields.1", "unknown fields (request_timestamp, nested objects) are ignored",
      clauses=["TTS-ORDER"], expect="synthesized as if the fields were absent")
async def unknown_fields(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rid = uuid.uuid4().hex
    payload = {"text": SHORT, "request_id": rid, "voice": ctx.options.voice,
               "request_timestamp": time.time(), "client": {"name": "conformance", "v": [1, 2]}}
    await conv.complete(await conv.synthesize(SHORT, payload=payload))
    warnings = conv.warnings()
    if warnings:
        return non_strict(warnings[0])
    return ok()
