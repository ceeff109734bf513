"""isolation.*: concurrent sessions get their own audio; a bad, slow or vanishing session hurts no one."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from bidi_tts.frames import FrameKind, decode_control_frame
from bidi_tts.transports.websocket import websocket_url
from bidi_tts_conformance.cases._util import SENTENCE, SHORT, TINY
from bidi_tts_conformance.cases.frames import long_text, sentences
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.driver import Conversation, Reply
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, case, not_judged, ok


def _what_arrived(got: Reply | CaseFailed) -> str:
    if isinstance(got, CaseFailed):
        return got.actual or got.detail
    if got.error is not None:
        return f"error {got.error.code or '(no code)'}"
    if got.audio:
        return f"{got.record.audio_seconds:.2f} s of audio"
    return "synthesis_start, then no audio" if got.started is not None else "no audio"


async def _lengths_alone(ctx: CaseContext, texts: list[str]) -> list[float] | str:
    """The audio seconds of each text alone, each on a session of its own; why not, when one fails."""
    seconds = []
    for text in texts:
        conv = await ctx.conversation()
        try:
            seconds.append((await conv.say(text, lenient=True)).record.audio_seconds)
        except CaseFailed as exc:
            return f"{text!r} alone: {exc.detail}"
        finally:
            await conv.close()
    return seconds


def _follow(seconds: list[float]) -> bool:
    return seconds[0] < seconds[2] and seconds[1] < seconds[2]


@case("isolation.concurrent.1", "3 concurrent sessions with texts of different lengths get their own audio",
      clauses=["TTS-ISOLATION", "TTS-ORDER"],
      expect="each completes; longer text, longer audio, as alone; NOT-JUDGED when a session got no audio "
             "(silence is the single-session cases' subject) or the lengths do not follow alone either")
async def concurrent(ctx: CaseContext) -> Outcome:
    texts = [TINY, SHORT, SENTENCE + " " + SENTENCE]
    names = ["'Hi.'", "the 1-sentence text", "the 2-sentence text"]
    convs = [await ctx.conversation(patience=len(texts)) for _ in texts]
    rids = [await c.synthesize(t) for c, t in zip(convs, texts, strict=True)]
    got: list[Reply | CaseFailed] = []
    for item in await asyncio.gather(*(c.wait_reply(r, lenient=True) for c, r in zip(convs, rids, strict=True)),
                                     return_exceptions=True):
        if not isinstance(item, (Reply, CaseFailed)):
            raise item
        got.append(item)
    shown = "; ".join(f"{name}: {_what_arrived(g)}" for name, g in zip(names, got, strict=True))
    replies = [g for g in got if isinstance(g, Reply)]
    silent = [name for name, g in zip(names, got, strict=True)
              if isinstance(g, CaseFailed) or (g.error is None and not g.audio)]
    if silent:
        # No audio is not someone else's audio: a slow or mute container is judged by the cases of one session.
        return not_judged(f"no audio on {len(silent)} of {len(texts)} concurrent sessions within "
                          f"{convs[0].silence:.1f} s ({shown}): whether each got its own audio cannot be told; "
                          "a session that gets no audio is the single-session cases' subject (frames.*, audio.*), "
                          "one held behind another's message isolation.hol.1's")
    for conv, name, reply in zip(convs, names, replies, strict=True):
        if reply.error is not None:
            code = reply.error.code or "(no code)"
            alone = await _lengths_alone(ctx, [reply.record.text])
            if isinstance(alone, str):
                return not_judged(f"{name} was refused with error {code} beside two other sessions, and failed "
                                  f"alone too ({alone}): not the other sessions' doing")
            raise CaseFailed(f"a valid message was refused with error {code} beside two other sessions, and "
                             "synthesized alone", expected="synthesis", actual=f"error {code}")
        conv.raise_violations()
    seconds = [r.record.audio_seconds for r in replies]
    beside = ", ".join(f"{s:.2f}" for s in seconds)
    if not _follow(seconds):
        alone = await _lengths_alone(ctx, texts)
        if isinstance(alone, str):
            return not_judged(f"audio lengths {beside} s beside each other do not follow the text lengths "
                              f"{[len(t) for t in texts]}, and alone one failed ({alone})")
        alone_shown = ", ".join(f"{s:.2f}" for s in alone)
        if not _follow(alone):
            return not_judged(f"audio lengths {beside} s beside each other, {alone_shown} s alone: the container's "
                              f"audio does not follow the text lengths {[len(t) for t in texts]} even one session "
                              "at a time, so the lengths show nothing about isolation")
        raise CaseFailed(f"audio lengths {beside} s beside each other do not follow the text lengths "
                         f"{[len(t) for t in texts]}, while alone they do ({alone_shown} s): beside each other, the "
                         "sessions got each other's audio or had their own cut",
                         expected="longer text, longer audio", actual=f"{beside} s beside, {alone_shown} s alone")
    return ok("audio " + ", ".join(f"{s:.2f} s" for s in seconds))


HOL_LONG = (
    "The morning train was late again. A child counted the pigeons on the platform. Her father read "
    "the timetable twice. Somewhere a radio played an old song about the sea. At last the train came "
    "around the bend. Everyone pressed forward at once. The conductor smiled at the crowd. Outside, "
    "the rain kept falling on the empty square."
)


HOL_INTO_A_S = 1.0  # the second try's B goes this long into A at the latest (A's 8 sentences take longer)


@dataclass(slots=True)
class _HolTrial:
    """One try of isolation.hol.1: A's long message, B's 'Hi.' beside it."""

    a: Reply
    b: Reply
    b_conv: Conversation
    when: str
    a_left: bool = False  # A was left unread once its audio went on after B's first: it was not done then

    @property
    def a_done(self) -> float | None:
        if self.a_left:
            return None
        frames = self.a.record.frame_times
        return self.a.record.completed_at or (frames[-1] if frames else None)

    @property
    def b_first_before_a_first(self) -> bool:
        """B was served before A showed any audio: nothing says A was being synthesized when B asked
        (a container that prepares A's text before taking its lock lets B win that race)."""
        b_first, a_first = self.b.record.first_audio_at, self.a.record.first_audio_at
        return b_first is not None and (a_first is None or b_first < a_first)


class _NotSetUp(Exception):
    """The situation of isolation.hol.1 could not be set up, for a reason other cases judge."""


async def _hol_trial(ctx: CaseContext, alone: float, *, at_audio: bool) -> _HolTrial:
    """B goes at A's first sign of work (synthesis_start, or audio where there is none), or 2x B alone
    after A, whichever is first (for a container that sends all audio at the end, A's first audio is its
    last, and B would meet an idle model); with `at_audio`, at A's first audio frame (A is being
    synthesized then, whatever it did before) or HOL_INTO_A_S (at least 2x B alone + 0.5 s) into A,
    whichever is first: a container that sends A whole at its end (the AWS sample's kokoro-cpu) shows
    no first audio before A is done, yet is making A then."""
    b = await ctx.conversation(patience=2)
    a = await ctx.conversation(patience=sentences(HOL_LONG) / 2)
    long_reply = a.replies[await a.synthesize(HOL_LONG)]
    if at_audio:
        into_a = max(HOL_INTO_A_S, 2 * alone + 0.5)
        await a.pump_until(lambda: bool(long_reply.audio) or long_reply.record.done, total=into_a)
        when = ("at A's first audio" if long_reply.audio or long_reply.record.done
                else f"{into_a * 1000:.0f} ms into A, before its first audio")
    else:
        await a.wait_answer(long_reply.request_id, within=2 * alone + 0.05)
        when = "at A's first sign of work" if long_reply.answered else "before A answered"
    if long_reply.error is not None:  # A is alone yet: a refusal of it is not B's doing
        raise _NotSetUp(f"session A's 8-sentence message was refused with error {long_reply.error.code or '(no code)'}"
                        " before B's 'Hi.' was sent (frames.long.1 and the errors.* cases judge a refusal)")
    short_reply = b.replies[await b.synthesize(TINY)]

    def a_settled() -> bool:
        """A is done, or A's audio went on arriving after B's first audio: B was served beside A, which
        is all the verdict needs of A, so the rest of A's 8 sentences is not waited for."""
        b_first, frames = short_reply.record.first_audio_at, long_reply.record.frame_times
        return long_reply.record.done or (b_first is not None and bool(frames) and frames[-1] > b_first)

    # Keep reading A (a session that is not read would be a slow reader, another case's business).
    reader = asyncio.create_task(a.pump_until(a_settled))
    try:
        await b.pump_until(lambda: bool(short_reply.audio) or short_reply.record.done)
        await asyncio.wait_for(asyncio.shield(reader), timeout=a.silence)
    except TimeoutError:
        pass
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
    left = not long_reply.record.done and a_settled()
    if left:
        await a.close()  # the container need not make the rest of A for nobody
    return _HolTrial(long_reply, short_reply, b, when, a_left=left)


@case("isolation.hol.1", "head-of-line blocking: a short message in one session is not held until another "
      "session's long message is finished", clauses=["TTS-ISOLATION"],
      expect="B's 'Hi.' sent at A's synthesis_start or 2x B alone after A (A: 8 sentences), again at A's first "
             "audio when B was served before A had any: first audio before A's synthesis_complete, or within 2x B "
             "alone (+0.5 s); NOT-JUDGED when A had ended before B was sent or B was never sent beside A's audio")
async def head_of_line(ctx: CaseContext) -> Outcome:
    # B's messages each on a session of their own (a second message is session.*'s business), after a
    # warm-up so that no model loading counts.
    try:
        await (await ctx.conversation()).say(TINY, lenient=True)
        alone = (await (await ctx.conversation()).say(TINY, lenient=True)).record.ttfa_s or 0.0
    except CaseFailed as exc:
        return not_judged(f"'Hi.' on a session alone, before any other session, failed ({exc.detail}): the "
                          "situation (B beside A's synthesis) cannot be set up; the single-session cases judge it")
    try:
        return await _judge_hol(ctx, alone)
    except _NotSetUp as exc:
        return not_judged(f"{exc}: the situation (B beside A's synthesis) did not occur")


async def _judge_hol(ctx: CaseContext, alone: float) -> Outcome:
    trial = await _hol_trial(ctx, alone, at_audio=False)
    raced = ""
    if trial.b_first_before_a_first:
        # B may have won a race to a lock A had not taken yet: try again with B sent while A is visibly
        # being synthesized, so that a pass is never luck.
        first = trial.b.record.first_audio_at or 0.0
        raced = (f"; a first try, B at A's synthesis_start, had B served {(first - trial.b.record.sent_at) * 1000:.0f}"
                 " ms after it was sent, before A had any audio (no sign A was being synthesized)")
        trial = await _hol_trial(ctx, alone, at_audio=True)
    long_reply, short_reply, b = trial.a, trial.b, trial.b_conv
    b_sent = short_reply.record.sent_at
    a_done = trial.a_done
    if a_done is not None and a_done <= b_sent + 0.02:  # (what had arrived before B, read just after)
        return not_judged(f"session A's 8 sentences had all arrived by the time B's 'Hi.' was sent ({trial.when}; "
                          f"A's last frame {(a_done - long_reply.record.sent_at) * 1000:.0f} ms after A was sent, B at "
                          f"{(b_sent - long_reply.record.sent_at) * 1000:.0f} ms): the situation (B beside A's "
                          f"synthesis) did not occur{raced}")
    if short_reply.record.first_audio_at is None and long_reply.record.first_audio_at is None:
        return not_judged(f"neither session A's 8 sentences nor session B's 'Hi.' got any audio ({trial.when}; B "
                          f"waited {b.silence:.1f} s: {b.received()}): a container silent for both is slow or mute, "
                          f"which is not shown to be A holding B (the single-session cases judge it){raced}")
    if short_reply.record.first_audio_at is None:
        raise CaseFailed(f"session B's 'Hi.' got no audio within {b.silence:.1f} s while session A "
                         f"synthesized a long message ({b.received()}){raced}", expected="B served beside A",
                         actual="B held")
    if trial.b_first_before_a_first:
        return not_judged("B's 'Hi.' was served before A had any audio, twice, also when sent at A's first audio"
                          f"{raced}: the situation (B beside A's synthesis) was never shown to occur")
    held = short_reply.record.first_audio_at - b_sent
    bound = max(2 * alone, alone + 0.5)
    a_first = long_reply.record.first_audio_at
    shown = (f"B's 'Hi.' sent {(b_sent - long_reply.record.sent_at) * 1000:.0f} ms after A's 8 sentences, "
             f"{trial.when}; B's first audio after {held * 1000:.0f} ms beside A, "
             f"{alone * 1000:.0f} ms alone; A's audio "
             + ("had all arrived before" if a_done is not None and a_done <= short_reply.record.first_audio_at
                else "was still arriving")
             + (f" (A's first audio {(a_first - long_reply.record.sent_at) * 1000:.0f} ms after it was sent)"
                if a_first is not None else "") + raced)
    if a_done is not None and a_done <= short_reply.record.first_audio_at and held > bound:
        raise CaseFailed(f"head-of-line blocking: session B waited for session A's whole message ({shown})",
                         expected=f"B's first audio before A's synthesis_complete or within {bound * 1000:.0f} ms",
                         actual=shown)
    return ok(shown)


async def ping_ok(ctx: CaseContext) -> str | None:
    if ctx.base_url is None:
        return None
    try:
        status = (await ctx.http().get("/ping", timeout=2.0)).status_code
    except httpx.HTTPError as exc:
        return f"/ping failed ({type(exc).__name__})"
    return None if status == 200 else f"/ping answered {status}"


async def _alone_fails(ctx: CaseContext) -> str | None:
    """Why a fresh session alone is not served (the good session's SENTENCE), or None when it is."""
    conv = await ctx.conversation()
    try:
        await conv.say(SENTENCE, lenient=True)
    except CaseFailed as exc:
        return exc.detail
    finally:
        await conv.close()
    return None


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
    good = await ctx.conversation(patience=2)
    rid = await good.synthesize(SENTENCE)
    await _vandal(ctx)
    try:
        reply = await good.wait_reply(rid, lenient=True)
        why = (f"error {reply.error.code or '(no code)'}" if reply.error else None if reply.audio else
               "synthesis_start, then no audio")
    except CaseFailed as exc:
        why = exc.actual or exc.detail
    if why is not None:
        if (alone := await _alone_fails(ctx)) is not None:
            return not_judged(f"the good session got {why} beside a misbehaving one, and a session alone after "
                              f"it failed too ({alone}): the container does not serve even one session, which is "
                              "the single-session cases' subject, not shown to be the neighbours' doing")
        raise CaseFailed(f"the good session got {why} beside a misbehaving one, while a session alone after it "
                         "was served", expected="synthesis", actual=why)
    if problem := await ping_ok(ctx):
        raise CaseFailed(f"{problem} after a misbehaving session", expected="200", actual=problem)
    await good.say(TINY, lenient=True)
    return ok(f"{len(reply.audio)} audio bytes for the good session")


@dataclass(frozen=True, slots=True)
class Stalled:
    """A session that sent its messages and reads nothing: how to drop it, and how much audio it holds."""

    drop: Callable[[], Awaitable[None]]
    waiting_audio: Callable[[], Awaitable[int]]  # bytes of audio that arrive at once when it does read


async def _stall(ctx: CaseContext, text: str) -> Stalled:
    """Open a session that sends `text` and then never reads. On a WebSocket target its socket has a tiny
    receive buffer and the client stops reading at once, so the container's sends block after a few
    kilobytes instead of filling megabytes of socket buffers."""
    if ctx.base_url is None:  # SageMaker: the edge buffers what it buffers
        conv = await ctx.conversation()
        for _ in range(3):
            await conv.synthesize(text)

        async def conv_audio() -> int:
            before = sum(len(r.audio) for r in conv.replies.values())
            await conv.pump_until(lambda: sum(len(r.audio) for r in conv.replies.values()) > before,
                                  silence=WAITING_S, total=1.0)
            return sum(len(r.audio) for r in conv.replies.values()) - before

        return Stalled(conv.close, conv_audio)
    parts = urlsplit(ctx.base_url)
    sock = socket.socket(socket.AF_INET6 if ":" in (parts.hostname or "") else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (parts.hostname or "127.0.0.1", parts.port or 80))
    ws = await connect(websocket_url(ctx.base_url), sock=sock, max_queue=1, max_size=None, ping_interval=None,
                       close_timeout=1.0, compression=None)
    for _ in range(3):
        await ws.send(json.dumps({"text": text, "voice": ctx.options.voice}))

    async def close() -> None:
        ws.transport.abort()  # a reader that never reads is dropped, not closed politely

    async def ws_audio() -> int:
        """Read until the first audio frame: one that is there at once was waiting, unread."""
        try:
            while True:
                frame = await asyncio.wait_for(ws.recv(), WAITING_S)
                if isinstance(frame, bytes) and decode_control_frame(frame) is None:
                    return len(frame)
        except (TimeoutError, ConnectionClosed):
            return 0

    return Stalled(close, ws_audio)


WAITING_S = 0.25  # audio already made arrives within this once the stalled session reads


@dataclass(frozen=True, slots=True)
class Beside:
    """How a good session fared beside a stalled one."""

    failure: CaseFailed | None  # why the good session was not served; None when it was
    served: str  # "served in X s" when it was
    held: int  # bytes the stalled session then held unread (when the good session failed, or after it was served)


async def serve_beside(ctx: CaseContext, stalled: Stalled, stalling: str) -> Beside:
    """Let the stalled session's audio pile up, serve a good session beside it, and see how much it holds
    unread; drop it at the end (work may run on: `ctx.left_work_running`). A /ping that fails once the good
    session was served fails the case: "{problem} while `stalling`"."""
    try:
        await asyncio.sleep(0.5)  # let its audio start to pile up
        good = await ctx.conversation(patience=2)
        try:
            reply = await good.say(SHORT, lenient=True)
        except CaseFailed as exc:
            return Beside(exc, "", await stalled.waiting_audio())
        if problem := await ping_ok(ctx):
            raise CaseFailed(f"{problem} while {stalling}", expected="/ping 200", actual=problem)
        held = await stalled.waiting_audio()
    finally:
        await stalled.drop()
        ctx.left_work_running = True
    return Beside(None, f"served in {(reply.record.complete_s or reply.record.ttfa_s or 0):.2f} s", held)


@case("isolation.slow_reader.1", "a session that stops reading does not stall another session",
      clauses=["TTS-ISOLATION"],
      expect="another session's message completes while the first one's audio waits unread; NOT-JUDGED when "
             "the first session had no audio waiting when the other one was served")
async def slow_reader(ctx: CaseContext) -> Outcome:
    beside = await serve_beside(ctx, await _stall(ctx, long_text(1_100)), "a session was not reading")
    if beside.failure is not None:
        if not beside.held:
            return not_judged(f"the other session was not served ({beside.failure.detail}), but the session that "
                              "does not read had no audio waiting: the container had not yet made any for it, so "
                              "this is head-of-line blocking (isolation.hol.1), not a slow reader's doing")
        raise CaseFailed(f"a session was stalled beside one that does not read (which had audio waiting, "
                         f"unread): {beside.failure.detail}", expected="served beside the stalled session",
                         actual=beside.failure.actual)
    if not beside.held:
        return not_judged(f"the other session was {beside.served}, but the session that does not read had no audio "
                          "waiting for it then: the situation (a session holding unread audio) did not occur")
    return ok(f"{beside.served} beside a session holding unread audio")
