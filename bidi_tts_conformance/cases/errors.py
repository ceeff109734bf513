"""errors.*: one case per error code of CONTRACT.md: a coded error frame, then a usable session."""

from __future__ import annotations

import asyncio
import json

from bidi_tts.frames import FrameKind
from bidi_tts_conformance.cases._util import SHORT, TINY, Bad, expect_refusal, message_problem, require_code
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, case, informational, ok

TWO_MB = 2 * 1024 * 1024


def _msg(**fields: object) -> str:
    return json.dumps({"text": SHORT, **fields})


@case("errors.invalid_utf8.1", "a BINARY message that is not UTF-8",
      clauses=["TTS-ERROR"], expect="error invalid_utf8 (or close 1007)")
async def invalid_utf8(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad("invalid UTF-8", b'{"text": "Hello \xff\xfe there."}', ("invalid_utf8",),
                                         (1007,), FrameKind.BINARY))


@case("errors.invalid_json.1", "a message that is not JSON",
      clauses=["TTS-ERROR"], expect="error invalid_json")
async def invalid_json(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad("plain text", "Hello there, this is not JSON.", ("invalid_json",)))


@case("errors.invalid_json.2", "a bad message in a BINARY frame gets the same coded error",
      clauses=["TTS-ERROR", "TTS-BINARY-IN"], expect="error invalid_json")
async def invalid_json_binary(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad("truncated JSON in a BINARY frame", b'{"text": "Hello', ("invalid_json",),
                                         kind=FrameKind.BINARY))


@case("errors.not_an_object.1", "JSON that is not an object",
      clauses=["TTS-ERROR"], expect="error not_an_object")
async def not_an_object(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad("a JSON array", '["Hello there."]', ("not_an_object",)))


@case("errors.text_required.1", "a message without text",
      clauses=["TTS-ERROR"], expect="error text_required")
async def text_missing(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad("no text field", json.dumps({"voice": ctx.options.voice}),
                                         ("text_required",)))


@case("errors.text_too_long.1", "text of 2 MB (never accepted)",
      clauses=["TTS-ERROR"], expect="error text_too_long, or close 1009 (message too big)")
async def text_too_long(ctx: CaseContext) -> Outcome:
    payload = json.dumps({"text": "word " * (TWO_MB // 5 + 1)})
    return await expect_refusal(ctx, Bad("2 MB of text", payload, ("text_too_long",), (1009,)))


@case("errors.unknown_voice.1", "a voice the container does not have",
      clauses=["TTS-ERROR"], expect="error unknown_voice")
async def unknown_voice(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad("voice zz_nobody", _msg(voice="zz_nobody"), ("unknown_voice",)))


@case("errors.bad_speed.1", "speed 0", clauses=["TTS-ERROR"], expect="error bad_speed")
async def bad_speed(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad("speed 0", _msg(speed=0), ("bad_speed",)))


@case("errors.bad_sample_rate.1", "sample_rate 12345", clauses=["TTS-ERROR"], expect="error bad_sample_rate")
async def bad_sample_rate(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad("sample_rate 12345", _msg(sample_rate=12345), ("bad_sample_rate",)))


@case("errors.unknown_type.1", 'an unknown "type"', clauses=["TTS-ERROR"], expect="error unknown_type")
async def unknown_type(ctx: CaseContext) -> Outcome:
    return await expect_refusal(ctx, Bad('type "dance"', _msg(type="dance"), ("unknown_type",)))


MESSAGE_PROBES = [
    Bad("plain text", "Hello there, this is not JSON.", ("invalid_json",)),
    Bad("a JSON array", '["Hello there."]', ("not_an_object",)),
    Bad("no text field", json.dumps({"voice": "af_heart"}), ("text_required",)),
    Bad("voice zz_nobody", _msg(voice="zz_nobody"), ("unknown_voice",)),
    Bad("speed 0", _msg(speed=0), ("bad_speed",)),
    Bad("sample_rate 12345", _msg(sample_rate=12345), ("bad_sample_rate",)),
    Bad('type "dance"', _msg(type="dance"), ("unknown_type",)),
]


@case("errors.message.1", "every error frame carries a message for people, never a bare exception string",
      clauses=["TTS-ERROR"], expect="a human sentence in each error's message (not 'text', not a traceback)")
async def human_messages(ctx: CaseContext) -> Outcome:
    # Each probe on a session of its own: one that ends its session must not leave the others unjudged.
    problems, seen, unanswered = [], 0, []
    for bad in MESSAGE_PROBES:
        conv = await ctx.conversation()
        rid = conv.track()
        await conv.send_raw(bad.payload, kind=bad.kind)
        reply = await conv.wait_answer(rid)
        if reply.error is None:
            if conv.closed is None:
                await conv.wait_reply(rid, lenient=True)  # refusing it is errors.*'s business; here only messages count
            unanswered.append(bad.what)
            await conv.close()
            continue
        seen += 1
        if problem := message_problem(reply.error.message):
            problems.append(f"{bad.what}: {problem}")
        await conv.close()
    if problems:
        raise CaseFailed(f"{len(problems)} of {seen} error messages are not for people: " + "; ".join(problems),
                         expected="a human message", actual=problems[0])
    if not seen:
        raise CaseFailed(f"no error frame at all for {len(MESSAGE_PROBES)} bad messages", expected="error frames",
                         actual="none")
    more = f" ({len(unanswered)} probes got no error frame: {', '.join(unanswered)})" if unanswered else ""
    return ok(f"{seen} of {len(MESSAGE_PROBES)} error messages, each for people{more}")


@case("errors.busy.1", "8 sessions at once: all served, or refused with a coded busy error",
      clauses=["TTS-ERROR", "TTS-ISOLATION"], expect="synthesis or error busy; the session stays usable")
async def busy(ctx: CaseContext) -> Outcome:
    convs = [await ctx.conversation(patience=8) for _ in range(8)]
    rids = [await c.synthesize(TINY) for c in convs]
    replies = await asyncio.gather(*(c.wait_reply(r, lenient=True) for c, r in zip(convs, rids, strict=True)))
    busy_convs = []
    for conv, reply in zip(convs, replies, strict=True):
        if reply.error is None:
            conv.raise_violations()
            continue
        require_code(reply.error, "busy", "under load a valid message got error", expected="synthesis or busy")
        if problem := message_problem(reply.error.message):
            conv.notes.add(f"TTS-ERROR: {problem} (judged by errors.message.1)")
        busy_convs.append(conv)
    if busy_convs:
        await busy_convs[0].say(TINY, lenient=True)  # a session that saw busy stays usable once load drops
        return informational(f"{len(busy_convs)} of 8 sessions answered busy (coded correctly)")
    return ok("8 concurrent sessions served")
