"""Admission: what a full container answers, and whether the room it had comes back.

A container holds a bounded number of messages at once; past that it refuses a message `busy` at once
(CONTRACT.md: 503 with `busy` while full, for POST; an error frame on the WebSocket). Three things no other
case reaches (mutants of the reference container, issue 44): the `busy` frame must carry the refused
message's request_id, a busy POST must say why in a `message`, and a POST that has ended must give its
place back (else capacity leaks until every request is refused `busy`).

Each fills the container first: sessions opened one by one, each with a long message that keeps it
busy, until one is refused `busy` (at most FILL_SESSIONS). A container that takes them all was never full
here: the cases are NOT-JUDGED, never OK. The sessions leave at the end (their long messages abandoned),
so the cases run late (selection.RUN_LAST).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from bidi_tts.session import ErrorReceived
from bidi_tts_conformance.cases._util import SHORT, TINY, message_problem
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.driver import Conversation, Reply
from bidi_tts_conformance.failures import CaseFailed, CaseNotJudged
from bidi_tts_conformance.model import Outcome, Requires, case, not_judged, ok

FILL_SESSIONS = 24
# Long enough to be still in synthesis while the next sessions open (about 20 s of speech), short enough that a
# container that goes on making abandoned messages is not kept busy for minutes by 24 of them.
HOLD = " ".join(["The lighthouse keeper climbed the stairs again, counting every step on the way up."] * 4)
EMPTY_WAIT_S = 10.0  # after the filling sessions leave, how long the container may take to empty


@dataclass
class Fill:
    """The sessions that fill the container, and the first message refused `busy` (None: never full)."""

    held: list[Conversation] = field(default_factory=list)
    refused: Reply | None = None
    refused_on: Conversation | None = None
    request_id: str = ""
    unheld: str = ""  # why a long message did not stay in synthesis (then nothing shows the room)

    @property
    def room(self) -> int:
        """Messages taken before the first refusal: the container's room."""
        return len(self.held)

    async def leave(self) -> None:
        for conv in [*self.held, *([self.refused_on] if self.refused_on else [])]:
            await conv.close()


async def _emptied(ctx: CaseContext) -> Reply | None:
    """A 'Hi.' synthesized once the filling sessions have left (None: still refused busy after EMPTY_WAIT_S)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + EMPTY_WAIT_S
    while True:
        conv = await ctx.conversation()
        try:
            reply = await conv.wait_reply(await conv.synthesize(TINY), lenient=True)
        finally:
            await conv.close()
        if reply.error is None or reply.error.code != "busy":
            return reply
        if loop.time() > deadline:
            return None
        await asyncio.sleep(0.5)


async def fill(ctx: CaseContext) -> Fill:
    """From an idle container (a 'Hi.' served), open sessions one at a time, each with a long message, until a
    message is refused `busy`."""
    filled = Fill()
    if await _emptied(ctx) is None:
        filled.unheld = f"not even begun: a 'Hi.' was still refused busy {EMPTY_WAIT_S:g} s into the case"
        return filled
    for n in range(1, FILL_SESSIONS + 1):
        conv = await ctx.conversation(patience=n)
        rid = conv.track(f"conformance-fill-{n}")
        await conv.send_raw(json.dumps({"text": HOLD, "voice": ctx.options.voice, "request_id": rid}))
        reply = await conv.wait_answer(rid)
        if reply.error is not None and reply.error.code == "busy":
            filled.refused, filled.refused_on, filled.request_id = reply, conv, rid
            return filled
        if reply.error is not None or reply.record.done:  # refused for another reason, or made at once
            await conv.close()
            filled.unheld = (f"refused with error {reply.error.code or '(no code)'}" if reply.error is not None
                             else "made whole at once")
            return filled
        filled.held.append(conv)
    return filled


@asynccontextmanager
async def _filled(ctx: CaseContext) -> AsyncIterator[Fill]:
    """The container filled (:func:`fill`) while the block runs; its sessions leave at the end."""
    filled = await fill(ctx)
    try:
        yield filled
    finally:
        await filled.leave()


def _busy_refusal(filled: Fill) -> ErrorReceived:
    """The `busy` error that showed the container full; NOT-JUDGED where none came (it was never full here)."""
    if filled.refused is not None and filled.refused.error is not None:
        return filled.refused.error
    if filled.unheld:
        raise CaseNotJudged(f"a long message to fill the container was {filled.unheld} (after {filled.room} held): "
                            "the container was never full here, so what it answers when full did not occur")
    raise CaseNotJudged(f"no message was refused busy with {filled.room} sessions synthesizing long messages at "
                        "once: the container was never full here, so what it answers when full did not occur")


@case("errors.busy.2", "a message refused busy at admission (the container full) carries its own request_id",
      clauses=["TTS-ERROR", "TTS-ORDER"], requires=[Requires.WEBSOCKET],
      expect="error busy with the refused message's request_id")
async def busy_request_id(ctx: CaseContext) -> Outcome:
    async with _filled(ctx) as filled:
        got = _busy_refusal(filled).request_id
        if got != filled.request_id:
            raise CaseFailed(f"the busy error at admission carries request_id {got!r}, not the refused message's "
                             f"{filled.request_id!r} (after {filled.room} messages held): a client cannot tell "
                             "which message was refused", expected=repr(filled.request_id), actual=repr(got))
        return ok(f"message {filled.room + 1} refused busy with its own request_id, {filled.room} messages held")


@case("post.busy.1", "a POST /invocations while the container is full: 503 with a JSON body "
      "{\"code\": \"busy\", \"message\"}", clauses=["POST-INVOCATIONS", "TTS-ERROR"],
      requires=[Requires.HTTP, Requires.WEBSOCKET],
      expect="HTTP 503, code busy and a message for people")
async def post_busy(ctx: CaseContext) -> Outcome:
    async with _filled(ctx) as filled:
        _busy_refusal(filled)  # NOT-JUDGED where the container was never full
        response = await ctx.http().post("/invocations", json={"text": SHORT, "voice": ctx.options.voice})
        if response.status_code == 200:
            return not_judged(f"the POST was served while {filled.room} sessions held the container full: POSTs "
                              "have room of their own here, so a busy POST did not occur")
        try:
            body = response.json()
        except ValueError:
            body = None
        shown = response.text[:200]
        if response.status_code != 503 or not isinstance(body, dict) or body.get("code") != "busy":
            raise CaseFailed(f"a POST while the container was full answered HTTP {response.status_code} {shown!r}",
                             expected='503 {"code": "busy", "message": ...}',
                             actual=f"{response.status_code} {shown}")
        if problem := message_problem(body.get("message")):
            raise CaseFailed(f"a busy POST answered with no message for people: {problem} (body {shown})",
                             expected='503 {"code": "busy", "message": ...}', actual=shown)
        return ok(f"503 busy: {body['message']!r} ({filled.room} messages held)")


@case("post.capacity.1", "POSTs /invocations that have ended give their place back: more of them, one after "
      "another, than the container has room for, then a message", clauses=["POST-INVOCATIONS", "TTS-ISOLATION"],
      requires=[Requires.HTTP, Requires.WEBSOCKET],
      expect="every POST and the message after them served; none refused busy on an idle container")
async def post_capacity(ctx: CaseContext) -> Outcome:
    filled = await fill(ctx)
    await filled.leave()
    _busy_refusal(filled)  # NOT-JUDGED where the container was never full
    if await _emptied(ctx) is None:
        return not_judged(f"the container still refused busy {EMPTY_WAIT_S:g} s after the {filled.room} sessions "
                          "that filled it had left (work that outlives its client: close.client.1's business), so "
                          "an idle container did not occur")
    posts = filled.room + 2
    for n in range(1, posts + 1):
        response = await ctx.http().post("/invocations", json={"text": TINY, "voice": ctx.options.voice})
        if response.status_code != 200:
            raise CaseFailed(f"capacity leaks: POST {n} of {posts}, one after another on an idle container with room "
                             f"for {filled.room}, answered HTTP {response.status_code} {response.text[:120]!r}: the "
                             "POSTs before it, each answered to its end, kept their places",
                             expected="HTTP 200", actual=f"HTTP {response.status_code}")
    conv = await ctx.conversation()
    try:
        reply = await conv.wait_reply(await conv.synthesize(TINY), lenient=True)
    finally:
        await conv.close()
    if reply.error is not None and reply.error.code == "busy":
        raise CaseFailed(f"capacity leaks: after {posts} POSTs, each answered to its end, a message on an idle "
                         f"container with room for {filled.room} was refused busy",
                         expected="synthesis", actual="error busy")
    return ok(f"{posts} POSTs one after another, then a message, all served (room for {filled.room})")
