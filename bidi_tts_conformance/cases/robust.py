"""robust.*: the bad-input battery (issue 7 part 1). Every input is answered per CONTRACT.md with a
coded error frame and a session that still works, or a clean 1007/1009 close where it is fatal."""

from __future__ import annotations

import asyncio
import json
import random
import time

from bidi_tts.frames import FrameKind
from bidi_tts.session import ErrorReceived
from bidi_tts_conformance.cases._util import (
    SHORT,
    TINY,
    Bad,
    fresh_session_works,
    message_problem,
    refuse,
    require_code,
    still_listening,
    usable_after,
)
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, Requires, case, non_strict, ok


def _msg(**fields: object) -> str:
    body = {"text": SHORT}
    body.update(fields)  # type: ignore[arg-type]
    return json.dumps(body)


def _raw(fragment: str) -> str:
    """A message with a raw JSON fragment for one field (NaN, Infinity, 1e400 are not in json.dumps)."""
    return '{"text": "Hello there.", ' + fragment + "}"


def _register(
    id: str, description: str, clauses: list[str], inputs: list[Bad], requires: list[Requires] | None = None
) -> None:
    expect = "; ".join(sorted({b.answers for b in inputs})) + "; each judged on its own"

    async def check(ctx: CaseContext) -> Outcome:
        results = [(bad, await _judge_input(ctx, bad)) for bad in inputs]
        if not any(isinstance(r, CaseFailed) for _, r in results):
            await fresh_session_works(ctx, f"{len(inputs)} bad inputs")  # the container still synthesizes
        return _verdict(results)

    case(id, description, clauses=clauses, expect=expect, requires=requires or [])(check)


async def _judge_input(ctx: CaseContext, bad: Bad) -> Outcome | CaseFailed:
    """One input on a session of its own, so that no answer or warning counts against another input;
    a liveness probe that costs no synthesis shows the session survived it."""
    conv = await ctx.conversation()
    try:
        outcome = await refuse(conv, bad)
        if conv.closed is None:
            await still_listening(conv, bad.what)
        return outcome
    except CaseFailed as exc:
        return exc
    finally:
        await conv.close()


def _verdict(results: list[tuple[Bad, Outcome | CaseFailed]]) -> Outcome:
    """FAILED naming every input answered wrongly; NON-STRICT when some bend a SHOULD; else OK."""
    failed = [r for _, r in results if isinstance(r, CaseFailed)]
    if failed:
        raise CaseFailed(f"{len(failed)} of {len(results)} inputs answered wrongly: "
                         + "; ".join(r.detail for r in failed), expected=failed[0].expected,
                         actual=failed[0].actual)
    outcomes = [r for _, r in results if isinstance(r, Outcome)]
    details = "; ".join(r.detail for r in outcomes)
    bent = [r for r in outcomes if r.verdict != "OK"]
    if bent:
        return non_strict(f"{len(bent)} of {len(results)} inputs bend a SHOULD: {details}")
    return ok(f"{details}; the container still synthesizes")


_BAD_UTF8 = Bad("invalid UTF-8 in a BINARY frame", b'{"text": "caf\xc3"}', ("invalid_utf8",), (1007,),
                FrameKind.BINARY)
_SURROGATE = Bad("an encoded surrogate (CESU) in a BINARY frame", b'{"text": "\xed\xa0\x80 hi"}',
                 ("invalid_utf8",), (1007,), FrameKind.BINARY)
_OVERLONG = Bad("an overlong UTF-8 encoding in a BINARY frame", b'{"text": "\xc0\xaf"}', ("invalid_utf8",),
                (1007,), FrameKind.BINARY)
_register("robust.utf8.1", "invalid UTF-8: truncated, surrogate and overlong sequences",
          ["TTS-ERROR"], [_BAD_UTF8, _SURROGATE, _OVERLONG])
_register("robust.utf8.2", "invalid UTF-8 in a TEXT frame (the WebSocket layer must reject it)",
          ["TTS-ERROR"], [Bad("invalid UTF-8 in a TEXT frame", b'{"text": "caf\xc3"}', ("invalid_utf8",),
                              (1007,), FrameKind.TEXT)])
_register("robust.json.1", "truncated JSON", ["TTS-ERROR"], [
    Bad("truncated JSON", '{"text": "Hello', ("invalid_json",)),
    Bad("a lone brace", "{", ("invalid_json",)),
    Bad("an empty TEXT message", "", ("invalid_json", "text_required")),
    Bad("an empty BINARY message", b"", ("invalid_json", "text_required"), kind=FrameKind.BINARY),
])
_register("robust.json.2", "deeply nested JSON (100,000 levels)", ["TTS-ERROR"], [
    Bad("100,000 nested arrays in an extra field", _raw('"x": ' + "[" * 100_000 + "]" * 100_000),
        ("invalid_json",), (1009,), accept_success=True),
    Bad("100,000 nested arrays", "[" * 100_000 + "]" * 100_000, ("invalid_json", "not_an_object"), (1009,)),
])
_register("robust.json.3", "JSON that is not an object: array, string, number, null, true",
          ["TTS-ERROR"], [Bad(f"JSON {p}", p, ("not_an_object",))
                          for p in ("[]", '"Hello there."', "42", "null", "true")])

_register("robust.types.text", "wrong types for text: number, null, list, object, boolean", ["TTS-ERROR"],
          [Bad(f"text={v!r}", json.dumps({"text": v}), ("text_required",))
           for v in (42, None, ["Hello"], {"t": "Hello"}, True)])
_WRONG_VOICES: tuple[object, ...] = (42, ["af_heart"], {}, True)
_WRONG_SPEEDS: tuple[object, ...] = ("fast", "1.0", True, [1], {})
_register("robust.types.voice", "wrong types for voice: number, list, object, boolean", ["TTS-ERROR"],
          [Bad(f"voice={v!r}", _msg(voice=v), ("unknown_voice",)) for v in _WRONG_VOICES])
_register("robust.types.speed", "wrong types for speed: string, boolean, list, object", ["TTS-ERROR"],
          [Bad(f"speed={v!r}", _msg(speed=v), ("bad_speed",)) for v in _WRONG_SPEEDS])
_register("robust.types.sample_rate", "wrong types for sample_rate: string, fraction, boolean, list",
          ["TTS-ERROR"], [Bad(f"sample_rate={v!r}", _msg(sample_rate=v), ("bad_sample_rate",))
                          for v in ("24000", 24000.5, True, [24000])])
_register("robust.types.type", "wrong types for type: number, list, object", ["TTS-ERROR"],
          [Bad(f"type={v!r}", _msg(type=v), ("unknown_type",)) for v in (42, ["close"], {"a": 1})])

_register("robust.text.1", "empty and whitespace-only text", ["TTS-ERROR"], [
    Bad("empty text", _msg(text=""), ("text_required",)),
    Bad("whitespace-only text", _msg(text="  \n\t  "), ("text_required",)),
    Bad("no-break and ideographic spaces only", _msg(text="\u00a0\u3000 "), ("text_required",)),
])
_register("robust.text.2", "control characters in text", ["TTS-ERROR"], [
    Bad("control characters only", _msg(text="\u0000\u0001\u0007\u001b"), ("text_required",),
        accept_success=True),
    Bad("text with embedded NUL and escape", _msg(text="Hello\u0000 there\u001b[31m."), ("text_required",),
        accept_success=True),
])
_register("robust.text.3", "text over the limit (200,000 characters)", ["TTS-ERROR"], [
    Bad("200,000 characters of text", _msg(text="word " * 40_000), ("text_too_long",), (1009,)),
])
# Over SageMaker the edge's own payload limits come first: this one is about the container's WebSocket.
_register("robust.size.1", "a message over the WebSocket size limit (8 MB of text)", ["TTS-ERROR"], [
    Bad("an 8 MB message", _msg(text="word " * (8 * 1024 * 1024 // 5)), ("text_too_long",), (1009,)),
], requires=[Requires.WEBSOCKET])
_register("robust.voice.1", "unknown and path-like voice names", ["TTS-ERROR"], [
    Bad(f"voice {v!r}", _msg(voice=v), ("unknown_voice",))
    for v in ("zz_nobody", "../../etc/passwd", "/etc/passwd", "af_heart/../../../etc/passwd",
              "..\\..\\windows\\win.ini", "af_heart\u0000", "", "AF_HEART" * 64)
])
_register("robust.speed.1", "speed NaN, Infinity, -Infinity, 1e400", ["TTS-ERROR"], [
    Bad(f"speed {v}", _raw(f'"speed": {v}'), ("bad_speed", "invalid_json"))
    for v in ("NaN", "Infinity", "-Infinity", "1e400")
])
_register("robust.speed.2", "speed 0, negative, huge", ["TTS-ERROR"], [
    Bad(f"speed {v}", _msg(speed=v), ("bad_speed",)) for v in (0, -1, -0.5, 11, 1e308)
])
_register("robust.rate.1", "unsupported sample rates", ["TTS-ERROR"], [
    Bad(f"sample_rate {v}", _msg(sample_rate=v), ("bad_sample_rate",))
    for v in (12345, 0, -24000, 1, 10**9)
])
_register("robust.type.1", "unknown type values", ["TTS-ERROR"], [
    Bad(f"type {v!r}", _msg(type=v), ("unknown_type",)) for v in ("speak", "", "synthesize ", "CLOSE")
])
_register("robust.binary.1", "a BINARY frame of random bytes", ["TTS-ERROR", "TTS-CLASSIFY"], [
    Bad("4 KiB of random bytes", b"\xff" + random.Random(7).randbytes(4096), ("invalid_utf8", "invalid_json"),
        (1007,), FrameKind.BINARY),
])


FLOOD = 16


@case("robust.flood.1", f"a flood of {FLOOD} messages without reading: bounded, no crash, all answered",
      clauses=["TTS-SESSION", "TTS-ERROR", "TTS-ISOLATION"],
      expect="every message completed or answered busy, in order; then the session and /ping work")
async def flood(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rids = [await conv.synthesize(TINY) for _ in range(FLOOD)]
    busy = 0
    for rid in rids:
        reply = await conv.wait_reply(rid, lenient=True)
        if reply.error is not None:
            require_code(reply.error, "busy", "a flooded valid message got error")
            if problem := message_problem(reply.error.message):
                conv.notes.add(f"TTS-ERROR: {problem} (judged by errors.message.1)")
            busy += 1
    conv.raise_violations()
    await usable_after(conv, "the flood")
    if ctx.base_url:
        status = (await ctx.http().get("/ping", timeout=2.0)).status_code
        if status != 200:
            raise CaseFailed(f"/ping answered {status} after the flood", expected="200", actual=str(status))
    return ok(f"{FLOOD} flooded messages: {FLOOD - busy} synthesized, {busy} busy")


@case("robust.session.long.1", "a long session: 30 messages mixing good and bad input, with pauses",
      clauses=["TTS-SESSION", "TTS-ERROR"], expect="every bad message refused, every good one synthesized")
async def long_session(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    bad = ['{"text": ', "[]", _msg(voice="zz_nobody"), _msg(speed=-1), _msg(type="dance")]
    good = errors = 0
    start = time.perf_counter()
    for i in range(30):
        if i % 6 == 0:
            await conv.say(TINY, lenient=True)
            good += 1
        else:
            rid = conv.track()
            await conv.send_raw(bad[i % len(bad)])
            reply = await conv.wait_reply(rid)
            if reply.error is None:
                raise CaseFailed(f"bad message {bad[i % len(bad)]!r} was synthesized at step {i}",
                                 expected="an error frame", actual="synthesis")
            errors += 1
        if i % 10 == 9:
            await asyncio.sleep(0.5)
    return ok(f"{good} synthesized, {errors} refused in {time.perf_counter() - start:.1f} s")


# Past any sensible bound on one session's unread messages (the reference container's is 1,024): they
# cost no synthesis, so the flood is cheap on any container, and the valid messages behind them meet a
# full inbox where there is one.
PAST_THE_BOUND = 1_200
BEHIND = 8
FLOOD_LEAD = ("The morning train was late again. A child counted the pigeons on the platform. Her father read "
              "the timetable twice. Somewhere a radio played an old song about the sea.")


@case("robust.flood.2", f"a flood past the session's bound: {PAST_THE_BOUND:,} messages without text and {BEHIND} "
      "valid ones, sent unread behind a message being synthesized",
      clauses=["TTS-ERROR", "TTS-SESSION"],
      expect=f"every message answered in order (the {PAST_THE_BOUND:,} with an error, each valid one synthesized or "
             "refused busy); no close; then the session and /ping work")
async def flood_past_bound(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation(patience=2)
    lead = await conv.synthesize(FLOOD_LEAD)
    empties = set()
    for i in range(PAST_THE_BOUND):
        rid = conv.track(request_id=f"flood-{i}")
        await conv.send_raw(json.dumps({"text": "", "request_id": rid}))
        empties.add(rid)
    valid = [await conv.synthesize(TINY) for _ in range(BEHIND)]
    total = PAST_THE_BOUND + BEHIND + 1
    busy = 0
    # The valid messages are read in order; the error frames of the messages without text come in between
    # and are counted by frame (not by the message they are attributed to: on a container that sends no
    # synthesis_complete the first one ends the message before it, audio.order.1's business).
    for n, rid in enumerate([lead, *valid]):
        what = "the message being synthesized" if rid == lead else f"'Hi.' {n} of {BEHIND} behind the flood"
        try:
            reply = await conv.wait_reply(rid, lenient=True)
        except CaseFailed as exc:
            raise CaseFailed(f"{what} ({total} messages sent unread) was not answered: {exc.detail}",
                             expected="every message answered (error or busy); the session stays open",
                             actual=exc.actual) from None
        error = reply.error
        if error is None or error.request_id in empties:
            continue
        require_code(error, "busy", f"{what} got error", expected="synthesis or busy")
        busy += 1
    errors = [e for e in conv.events if isinstance(e, ErrorReceived)]
    refused = [e for e in errors if e.request_id not in (lead, *valid)]
    if len(refused) < PAST_THE_BOUND:
        raise CaseFailed(f"{PAST_THE_BOUND - len(refused)} of the {PAST_THE_BOUND} messages without text were not "
                         f"answered ({len(refused)} error frames)", expected="an error frame for each",
                         actual=f"{len(refused)} error frames")
    busy += sum(e.code == "busy" for e in refused)
    if uncoded := sum(e.code is None for e in errors):
        conv.notes.add(f"TTS-ERROR: {uncoded} error frames without a code (judged by errors.text_required.1)")
    conv.raise_violations()
    await usable_after(conv, f"a flood of {total} messages")
    if ctx.base_url:
        status = (await ctx.http().get("/ping", timeout=2.0)).status_code
        if status != 200:
            raise CaseFailed(f"/ping answered {status} after the flood", expected="200", actual=str(status))
    held = ("none refused busy: the session held them all" if not busy else
            f"{busy} refused busy at the session's bound")
    return ok(f"{total} messages sent unread, all answered in order ({held}); the session still works")
