"""session.*: many messages in one session, pipelining, reuse after errors, request_id echo."""

from __future__ import annotations

import itertools
import json

from bidi_tts.transports.base import TransportTimeout
from bidi_tts_conformance.cases._util import SHORT, TINY
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.diagnose import describe_close
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, case, non_strict, ok

TEXTS = ["Hi.", "Okay.", "Yes.", "Thank you.", "Good night."]


async def _multi(ctx: CaseContext, count: int) -> Outcome:
    conv = await ctx.conversation()
    for i in range(count):
        try:
            await conv.say(TEXTS[i % len(TEXTS)], lenient=True)
        except CaseFailed as exc:
            closed = f" (the container {describe_close(conv.closed)})" if conv.closed else ""
            raise CaseFailed(f"message {i + 1} of {count} failed{closed}: {exc.detail}",
                             expected=f"{count} messages in one session", actual=f"{i} completed") from None
    return ok(f"{count} messages")


def _register_multi(id: str, count: int, description: str, expect: str) -> None:
    async def check(ctx: CaseContext) -> Outcome:
        return await _multi(ctx, count)

    case(id, description, clauses=["TTS-SESSION", "TTS-ORDER"], expect=expect)(check)


# session.multi.*: id, messages in one session, description, expectation; registered in this order.
MULTI: tuple[tuple[str, int, str, str], ...] = (
    ("session.multi.1", 2, "2 messages, one after the other, in one session",
     "both synthesized; the session stays open"),
    ("session.multi.2", 5, "5 messages in one session", "all synthesized"),
    ("session.multi.3", 20, "20 short messages in one session", "all synthesized"),
)
for _id, _count, _description, _expect in MULTI:
    _register_multi(_id, _count, _description, _expect)


@case("session.pipelined.1", "3 messages sent before reading: answered in order, never interleaved",
      clauses=["TTS-ORDER", "TTS-SESSION"], expect="start/audio/complete of each, in send order")
async def pipelined(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation(patience=3)
    rids = [await conv.synthesize(text) for text in ("One.", "Two.", "Three.")]
    # Stop at the first interleaving: there is nothing more to learn from the rest.
    await conv.pump_until(lambda: bool(conv.violations()) or all(conv.replies[r].record.done for r in rids))
    for rid in rids:
        await conv.wait_reply(rid, succeed=True)
    order = [conv.replies[r].record.started_at for r in rids]
    if any(a is None or b is None or a > b for a, b in itertools.pairwise(order)):
        raise CaseFailed("messages were not answered in send order", expected="One, Two, Three",
                         actual="another order")
    return ok()


@case("session.reuse.1", "the session keeps working after a run of different errors",
      clauses=["TTS-SESSION", "TTS-ERROR"], expect="each bad message gets an error; each good one audio")
async def reuse_after_errors(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    bad = ['{"text": "Hel', "[1, 2]", json.dumps({"text": ""}),
           json.dumps({"text": TINY, "voice": "zz_nobody"}), json.dumps({"type": "dance"})]
    for i, payload in enumerate(bad):
        rid = conv.track()
        await conv.send_raw(payload)
        reply = await conv.wait_reply(rid)
        if reply.error is None:
            raise CaseFailed(f"bad message {payload[:40]!r} was not refused", expected="an error frame",
                             actual="synthesis")
        try:
            await conv.say(TINY, lenient=True)
        except CaseFailed as exc:
            code = reply.error.code or "(no code)"
            raise CaseFailed(f"after bad message {i + 1} (answered with error {code}) the session stopped working: "
                             f"{exc.detail}", expected="synthesis", actual=exc.actual) from None
    return ok(f"{len(bad)} errors, {len(bad)} good messages")


# Error paths beyond "text required": a container may echo the id where it checks the message and lose
# it where an exception (a bad voice, a bad speed deep in the model call) is turned into an error.
ERROR_PATHS: tuple[tuple[str, dict[str, object]], ...] = (
    ("empty text", {"text": ""}),
    ("unknown voice", {"text": TINY, "voice": "zz_nobody"}),
    ("speed 0", {"text": TINY, "speed": 0}),
)


@case("session.request_id.1", "request_id is echoed in synthesis_start, synthesis_complete and error",
      clauses=["TTS-ORDER", "TTS-ERROR"],
      expect="each control frame carries the request_id of its own message, on every error path (empty text, "
             "unknown voice, speed 0)")
async def request_id_echo(ctx: CaseContext) -> Outcome:
    reply = await (await ctx.conversation()).say(SHORT, request_id="conformance-rid-1", lenient=True)
    got = {"synthesis_start": reply.started.request_id if reply.started else None,
           "synthesis_complete": reply.completed.request_id if reply.completed else None}
    want = {"synthesis_start": "conformance-rid-1", "synthesis_complete": "conformance-rid-1"}
    for n, (path, fields) in enumerate(ERROR_PATHS, 2):
        # A session each: a container may drop the session after an error (other cases judge that).
        conv = await ctx.conversation()
        rid = conv.track(f"conformance-rid-{n}")
        await conv.send_raw(json.dumps({**fields, "request_id": rid}))
        try:
            err = await conv.wait_reply(rid, lenient=True)
        except CaseFailed:
            continue  # no answer at all: the errors.* cases' subject
        await conv.close()
        if err.error is None:
            continue  # synthesized instead of refused: the errors.* cases' subject
        got[f"error ({path})"] = err.error.request_id
        want[f"error ({path})"] = rid
    wrong = {k: v for k, v in got.items() if v is not None and v != want[k]}
    if wrong:
        shown = ", ".join(f"{k} carries {v!r} instead of {want[k]!r}" for k, v in wrong.items())
        raise CaseFailed(f"request_id not echoed: {shown}", expected=str(want), actual=shown)
    missing = [k for k, v in got.items() if v is None and not (k == "synthesis_complete" and reply.completed is None)]
    if missing:
        return non_strict(f"request_id not echoed in {', '.join(missing)}")
    errors = [k for k in got if k.startswith("error (")]
    if not errors:
        return ok("request_id echoed in synthesis_start and synthesis_complete; no error path answered")
    return ok(f"request_id echoed in synthesis_start, synthesis_complete and {len(errors)} error paths")


@case("session.idle.1", "an idle session stays open (no frame, no close for 3 s) and then works",
      clauses=["TTS-SESSION"], expect="nothing arrives while idle; the next message is synthesized")
async def idle(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    try:
        frame = await conv.transport.receive(timeout=3.0)
        raise CaseFailed(f"an unsolicited frame arrived on an idle session: {frame.payload[:60]!r}",
                         expected="nothing", actual="a frame")
    except TransportTimeout:
        pass
    await conv.say(TINY, lenient=True)
    return ok()
