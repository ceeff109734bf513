"""robust.*: the bad-input battery (issue 7 part 1). Every input is answered per CONTRACT.md with a
coded error frame and a session that still works, or a clean 1007/1009 close where it is fatal."""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass

from bidi_tts.frames import FrameKind
from conformance.cases._util import SHORT, TINY, fresh_session_works, message_problem, refuse, usable_after
from conformance.context import CaseContext
from conformance.model import CaseFailed, Outcome, Requires, case, ok


@dataclass(frozen=True)
class Bad:
    """One bad input and the answers CONTRACT.md allows for it."""

    what: str
    payload: bytes | str
    codes: tuple[str, ...]
    close_codes: tuple[int, ...] = ()
    kind: FrameKind = FrameKind.TEXT
    accept_success: bool = False


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
    def answer(b: Bad) -> str:
        return " or ".join(b.codes) + (f" (or close {b.close_codes})" if b.close_codes else "")

    expect = "; ".join(sorted({answer(b) for b in inputs}))

    async def check(ctx: CaseContext) -> Outcome:
        # One session for the whole battery (a fresh one after an allowed fatal close); each
        # later answer shows the session survived the earlier input, and a final synthesis shows
        # it still works. One synthesis per case keeps the run short on a slow CPU.
        details = []
        conv = await ctx.conversation()
        for bad in inputs:
            if conv.closed is not None:
                await conv.close()
                conv = await ctx.conversation()
            outcome = await refuse(conv, bad.payload, bad.codes, what=bad.what, kind=bad.kind,
                                   close_codes=bad.close_codes, accept_success=bad.accept_success)
            details.append(outcome.detail)
            if outcome.verdict != "OK":
                return outcome
        if conv.closed is not None:
            await fresh_session_works(ctx, f"a close with {conv.closed.code}")
        else:
            await usable_after(conv, f"{len(inputs)} bad inputs")
        return ok("; ".join(details) + "; the session still works")

    case(id, description, clauses=clauses, expect=expect, requires=requires or [])(check)


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


@case("robust.flood.1", "a flood of 30 messages without reading: bounded, no crash, all answered",
      clauses=["TTS-SESSION", "TTS-ERROR", "TTS-ISOLATION"],
      expect="every message completed or answered busy, in order; then the session and /ping work")
async def flood(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rids = [await conv.synthesize(TINY) for _ in range(30)]
    busy = 0
    for rid in rids:
        reply = await conv.wait_reply(rid)
        if reply.error is not None:
            if reply.error.code != "busy":
                raise CaseFailed(f"a flooded valid message got {reply.error.code!r}", expected="busy",
                                 actual=str(reply.error.code))
            if problem := message_problem(reply.error.message):
                raise CaseFailed(problem)
            busy += 1
    conv.raise_violations()
    await usable_after(conv, "the flood")
    if ctx.base_url:
        status = (await ctx.http().get("/ping", timeout=2.0)).status_code
        if status != 200:
            raise CaseFailed(f"/ping answered {status} after the flood", expected="200", actual=str(status))
    return ok(f"30 flooded messages: {30 - busy} synthesized, {busy} busy")


@case("robust.session.long.1", "a long session: 40 messages mixing good and bad input, with pauses",
      clauses=["TTS-SESSION", "TTS-ERROR"], expect="every bad message refused, every good one synthesized")
async def long_session(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    bad = ['{"text": ', "[]", _msg(voice="zz_nobody"), _msg(speed=-1), _msg(type="dance")]
    good = errors = 0
    start = time.perf_counter()
    for i in range(40):
        if i % 4 == 0:
            await conv.say(TINY)
            good += 1
        else:
            rid = conv.track()
            await conv.send_raw(bad[i % len(bad)])
            reply = await conv.wait_reply(rid)
            if reply.error is None:
                raise CaseFailed(f"bad message {bad[i % len(bad)]!r} was synthesized at step {i}")
            errors += 1
        if i % 20 == 19:
            await asyncio.sleep(1.0)
    return ok(f"{good} synthesized, {errors} refused in {time.perf_counter() - start:.1f} s")
