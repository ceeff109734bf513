"""isolation.*: concurrent sessions get their own audio; a bad, slow or vanishing session hurts no one."""

from __future__ import annotations

import asyncio

import httpx

from bidi_tts.frames import FrameKind
from conformance.cases._util import SENTENCE, SHORT, TINY
from conformance.context import CaseContext
from conformance.model import CaseFailed, Outcome, case, ok


@case("isolation.concurrent.1", "3 concurrent sessions with texts of different lengths get their own audio",
      clauses=["TTS-ISOLATION", "TTS-ORDER"], expect="each completes; longer text, longer audio")
async def concurrent(ctx: CaseContext) -> Outcome:
    texts = [TINY, SHORT, SENTENCE + " " + SENTENCE]
    convs = [await ctx.conversation() for _ in texts]
    rids = [await c.synthesize(t) for c, t in zip(convs, texts, strict=True)]
    replies = await asyncio.gather(*(c.complete(r) for c, r in zip(convs, rids, strict=True)))
    seconds = [r.record.audio_seconds for r in replies]
    if not seconds[0] < seconds[2] or not seconds[1] < seconds[2]:
        raise CaseFailed(f"audio lengths {[f'{s:.2f}' for s in seconds]} s do not follow the text lengths "
                         f"{[len(t) for t in texts]}: sessions got each other's audio",
                         expected="longer text, longer audio", actual=str([round(s, 2) for s in seconds]))
    return ok("audio " + ", ".join(f"{s:.2f} s" for s in seconds))


async def _ping_ok(ctx: CaseContext) -> str | None:
    if ctx.base_url is None:
        return None
    try:
        status = (await ctx.http().get("/ping", timeout=2.0)).status_code
    except httpx.HTTPError as exc:
        return f"/ping failed ({type(exc).__name__})"
    return None if status == 200 else f"/ping answered {status}"


async def _vandal(ctx: CaseContext) -> None:
    """Bad inputs and an abrupt disconnect mid-message, on other sessions."""
    garbage = await ctx.conversation()
    for payload in (b"\xff\xfe\x00garbage", "not json", "[]"):
        try:
            await garbage.transport.send(payload, kind=FrameKind.BINARY if isinstance(payload, bytes)
                                         else FrameKind.TEXT)
        except Exception:  # the container may close this session: that is its right
            break
    leaver = await ctx.conversation()
    await leaver.synthesize(SENTENCE + " " + SENTENCE)
    await asyncio.sleep(0.05)
    await leaver.close()
    await garbage.close()


@case("isolation.neighbour.1", "a session sending garbage and one disconnecting mid-message do not hurt "
      "a good session", clauses=["TTS-ISOLATION", "SM-PING"],
      expect="the good session completes with no violation; /ping stays 200")
async def bad_neighbour(ctx: CaseContext) -> Outcome:
    good = await ctx.conversation()
    rid = await good.synthesize(SENTENCE)
    await _vandal(ctx)
    reply = await good.complete(rid)
    if problem := await _ping_ok(ctx):
        raise CaseFailed(f"{problem} after a misbehaving session", expected="200", actual=problem)
    await good.say(TINY)
    return ok(f"{len(reply.audio)} audio bytes for the good session")


@case("isolation.slow_reader.1", "a session that stops reading does not stall another session",
      clauses=["TTS-ISOLATION"], expect="the other session completes within the reply timeout")
async def slow_reader(ctx: CaseContext) -> Outcome:
    stalled = await ctx.conversation()
    for _ in range(3):
        await stalled.synthesize(SENTENCE + " " + SENTENCE)  # never read
    good = await ctx.conversation()
    reply = await good.say(SHORT)
    if problem := await _ping_ok(ctx):
        raise CaseFailed(f"{problem} while a session was not reading")
    await stalled.close()
    return ok(f"served in {reply.record.complete_s or 0:.2f} s beside a stalled session")
