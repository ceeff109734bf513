"""health.busy.1: the platform's two deadlines (accept within 250 ms, /ping within 2 s) while the container
synthesizes for other sessions. SageMaker takes an instance whose /ping fails out of service, dropping every
session on it, so a container that serves them only when idle fails in production, not on an idle test."""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from bidi_tts_conformance.cases.frames import long_text
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.driver import Conversation, Reply
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, Requires, case, non_strict, not_judged, ok

ACCEPT_DEADLINE_S = 0.25
PING_DEADLINE_S = 2.0
BUSY_SESSIONS = 3
BUSY_TEXT = long_text(1_100)  # about 70 s of speech: no container finishes it inside the window
WINDOW_S = 2.0  # how long new handshakes and /ping are polled
HANDSHAKE_WAIT_S = 1.0  # a handshake not done by then is recorded as unanswered (4x the deadline)
PING_WAIT_S = PING_DEADLINE_S + 0.5
POLL_GAP_S = 0.1
SLOW_SHARE = 4  # more than 1 in 4 handshakes over 250 ms (at least 2) is FAILED; fewer NON-STRICT
# After the polls, how long to wait for the busy sessions' next audio: audio before the polls and after
# them, of a message still unfinished, shows that the container was synthesizing all through them (a CPU
# container may take longer than the window to make one unit of speech for each of the sessions).
AFTER_S = 5.0


@dataclass(slots=True)
class _Polls:
    """What the polls saw: seconds per poll (infinite: unanswered), and what went wrong with /ping."""

    handshakes: list[float] = field(default_factory=list)
    pings: list[float] = field(default_factory=list)
    ping_problems: list[str] = field(default_factory=list)


def _ms(seconds: float, wait_s: float) -> str:
    return f"unanswered in {wait_s:.1f} s" if math.isinf(seconds) else f"{seconds * 1000:.0f} ms"


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


async def _poll_handshakes(ctx: CaseContext, until: float, polls: _Polls) -> None:
    while time.perf_counter() < until:
        start = time.perf_counter()
        try:
            transport = await asyncio.wait_for(ctx.connect(open_timeout=HANDSHAKE_WAIT_S), HANDSHAKE_WAIT_S + 0.5)
        except (CaseFailed, TimeoutError) as exc:
            if time.perf_counter() - start < HANDSHAKE_WAIT_S * 0.9:  # refused, not slow: say why
                raise CaseFailed(f"a new session was refused while {BUSY_SESSIONS} sessions synthesized: "
                                 f"{getattr(exc, 'detail', exc)}", expected="a WebSocket session",
                                 actual="refused") from None
            polls.handshakes.append(math.inf)
            continue
        polls.handshakes.append(time.perf_counter() - start)
        await transport.close()
        await asyncio.sleep(POLL_GAP_S)


async def _poll_pings(ctx: CaseContext, until: float, polls: _Polls) -> None:
    while time.perf_counter() < until:
        start = time.perf_counter()
        try:
            status = (await ctx.http().get("/ping", timeout=PING_WAIT_S)).status_code
        except httpx.HTTPError as exc:
            polls.pings.append(math.inf)
            polls.ping_problems.append(f"/ping unanswered after {time.perf_counter() - start:.1f} s "
                                  f"({type(exc).__name__})")
            continue
        polls.pings.append(time.perf_counter() - start)
        if status != 200:
            polls.ping_problems.append(f"/ping answered HTTP {status}")
        await asyncio.sleep(POLL_GAP_S)


def reply_done(reply: Reply) -> Callable[[], bool]:
    return lambda: reply.record.done


def _after(reply: Reply, end: float) -> bool:
    """Whether the message was still unfinished at `end` and had audio after it: it was being made (or
    waited its turn behind the other busy messages) all through the polls, sent before they began."""
    times, done = reply.record.frame_times, reply.record.completed_at
    return bool(times) and times[-1] >= end and (done is None or done >= end) and reply.error is None


async def _audio_after(replies: list[Reply], readers: list[asyncio.Task[str | None]], end: float,
                       within: float) -> None:
    deadline = time.perf_counter() + within
    while time.perf_counter() < deadline and not all(t.done() for t in readers):
        if any(_after(r, end) for r in replies):
            return
        await asyncio.sleep(0.01)


async def _first_audio(replies: list[Reply], readers: list[asyncio.Task[str | None]], within: float) -> bool:
    """Wait until a busy session has audio (synthesis is under way); False when none got any in time."""
    deadline = time.perf_counter() + within
    while time.perf_counter() < deadline:
        if any(r.record.first_audio_at is not None for r in replies):
            return True
        if all(t.done() for t in readers):
            return False
        await asyncio.sleep(0.01)
    return False


@case("health.busy.1", "new sessions are accepted within 250 ms and /ping answers within 2 s while other "
      "sessions synthesize", clauses=["SM-ACCEPT", "SM-PING", "TTS-ISOLATION"],
      expect=f"{BUSY_SESSIONS} sessions synthesizing long texts; for {WINDOW_S:.0f} s after their first audio, "
             "every new handshake within 250 ms (NON-STRICT for one, or up to a quarter, over) and every /ping "
             "200 within 2 s; "
             "NOT-JUDGED when no busy message had audio after the polls, mid-message",
      requires=[Requires.HTTP])
async def busy_container(ctx: CaseContext) -> Outcome:
    busy: list[Conversation] = [await ctx.conversation(patience=BUSY_SESSIONS) for _ in range(BUSY_SESSIONS)]
    replies = [conv.replies[await conv.synthesize(BUSY_TEXT)] for conv in busy]
    # Each busy session is read all along, so that its frames are stamped when they arrive.
    readers = [asyncio.create_task(conv.pump_until(reply_done(reply)))
               for conv, reply in zip(busy, replies, strict=True)]
    polls = _Polls()
    try:
        if not await _first_audio(replies, readers, within=busy[0].silence):
            refused = [r.error.code or "(no code)" for r in replies if r.error is not None]
            why = f"they were refused ({', '.join(refused)})" if refused else "none arrived"
            return not_judged(f"no audio on any of the {BUSY_SESSIONS} busy sessions ({why}): the situation (a "
                              "container synthesizing for other sessions) did not occur")
        start = time.perf_counter()
        until = start + WINDOW_S
        await asyncio.gather(_poll_handshakes(ctx, until, polls), _poll_pings(ctx, until, polls))
        end = time.perf_counter()
        await _audio_after(replies, readers, end, AFTER_S)
    finally:
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        ctx.left_work_running = any(not r.record.done for r in replies)
        for conv in busy:
            await conv.close()
    frames = sum(start <= t <= end for r in replies for t in r.record.frame_times)
    going = sum(_after(r, end) for r in replies)
    busy_shown = (f"the polls began at the busy sessions' first audio; {frames} audio frames arrived on them "
                  f"during the {end - start:.1f} s of polls, and {going} of the {BUSY_SESSIONS} had audio after "
                  "them, mid-message")
    if not going:
        return not_judged(f"{busy_shown}: no busy message was still being synthesized after the polls (no audio "
                          f"within {AFTER_S:.0f} s after them, or the messages had ended), so they show nothing "
                          "about a busy container")
    handshakes, pings = polls.handshakes, polls.pings
    hs = HANDSHAKE_WAIT_S
    shown = (f"{len(handshakes)} handshakes: p50 {_ms(statistics.median(handshakes), hs)}, p95 "
             f"{_ms(_p95(handshakes), hs)}, worst {_ms(max(handshakes), hs)}; {len(pings)} pings: worst "
             f"{_ms(max(pings), PING_WAIT_S)}; {busy_shown}")
    slow = [t for t in handshakes if t > ACCEPT_DEADLINE_S]
    # A few slow handshakes are what a loaded machine does now and then: on the reference container on 2
    # shared cores, 1 of 14-16 at 257-316 ms in two of three runs, each beside a /ping as slow (a stall of
    # the machine, not of the container; bench/bench_busy.py). A container that blocks while it synthesizes
    # is slow on most of them, or answers none within 1 s (tests/toys/busy.py: none of 14 in 10 s).
    if len(slow) > max(1, len(handshakes) // SLOW_SHARE) or any(math.isinf(t) for t in slow):
        raise CaseFailed(f"slow accept while busy: {len(slow)} of {len(handshakes)} handshakes over 250 ms "
                         f"({shown})", expected="every handshake within 250 ms", actual=shown)
    late = [t for t in pings if PING_DEADLINE_S < t < math.inf]
    if polls.ping_problems or late:
        what = polls.ping_problems[0] if polls.ping_problems else f"/ping took {max(late):.2f} s"
        raise CaseFailed(f"/ping failing while busy: {what} ({shown})", expected="/ping 200 within 2 s",
                         actual=shown)
    if slow:
        return non_strict(f"{len(slow)} handshake{'s' if len(slow) > 1 else ''} of {len(handshakes)} over 250 ms "
                          f"while busy ({shown})")
    return ok(shown)
