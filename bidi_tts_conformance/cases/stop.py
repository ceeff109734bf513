"""stop.*: work that outlives its client, and a container that outlives its stop. Judged only on a
container the suite started itself (it reads a local process's CPU time, and sends the process or the
Docker container SIGTERM); NOT-JUDGED elsewhere. stop.sigterm.1 ends the container: it is registered
last, and selection.RUN_LAST runs it after every other case."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from bidi_tts.chunker import split_sentences
from bidi_tts_conformance.cases._util import SENTENCE
from bidi_tts_conformance.cases.frames import long_text
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.diagnose import describe_close
from bidi_tts_conformance.driver import Conversation
from bidi_tts_conformance.failures import CaseFailed, CaseNotJudged
from bidi_tts_conformance.model import Outcome, case, not_judged, ok
from bidi_tts_conformance.process_probe import Watched, watched, why_not_watched
from bidi_tts_conformance.reply import Reply

ABANDONED_CHARS = 1_100
SETTLE_S = 1.0  # at least; a good container may finish the sentence in progress when its client leaves
SAMPLE_S = 1.5  # then its CPU time is read over this long, with no session open
IDLE_CPU_SHARE = 0.5  # of one core: more, with no client, is the abandoned message still being made
GRACE_S = 30.0  # SageMaker sends SIGKILL this long after SIGTERM
END_SEEN_S = 1.0  # after the exit, how long the session's end (a close frame, or the cut) may take to arrive


@dataclass(frozen=True, slots=True)
class _Left:
    """A message the client left, unmade, at the first audio of a one-sentence lead message."""

    first_s: float  # seconds to the lead's first audio: one sentence's pace
    to_come: int  # sentences of the left message
    busy_share: float  # of a core, while the container made the lead (the meter's own check)


def _refused(reply: Reply, text: str) -> None:
    if reply.error is not None:
        raise CaseFailed(f"a {len(text)}-character message was refused with error {reply.error.code or '(no code)'}",
                         expected="synthesis", actual=f"error {reply.error.code or '(no code)'}")


async def _send_behind_a_lead(conv: Conversation, text: str) -> tuple[Reply, Reply]:
    """Send one sentence, then `text` on the same session; return at the sentence's first audio.

    The lead makes "mid-synthesis" true whatever the container's frames: one that sends a whole
    message as one frame at its end (the AWS sample's kokoro-cpu) gives a message's first audio only
    when its work is done, so leaving at `text`'s own first audio would leave nothing behind."""
    lead = conv.replies[await conv.synthesize(SENTENCE)]
    left = conv.replies[await conv.synthesize(text)]
    await conv.pump_until(lambda: bool(lead.audio) or lead.record.done or left.record.done)
    return lead, left


def _watched(ctx: CaseContext) -> Watched:
    """The container's process, watched; NOT-JUDGED where the suite did not start it (nothing to watch)."""
    box = watched(ctx.target)
    if box is None:
        raise CaseNotJudged(why_not_watched(ctx.target))
    return box


def _unmade(reply: Reply) -> bool:
    return not reply.audio and not reply.record.done


async def _leave_mid_message(ctx: CaseContext, box: Watched, text: str) -> _Left | None:
    """Leave with `text` queued behind a lead sentence; None when `text` had begun to arrive by then."""
    conv = await ctx.conversation(patience=len(split_sentences(text)) / 2)
    cpu_sent = await asyncio.to_thread(box.cpu_seconds)
    lead, left = await _send_behind_a_lead(conv, text)
    _refused(lead, SENTENCE)
    _refused(left, text)
    cpu_first = await asyncio.to_thread(box.cpu_seconds)
    first = (lead.record.first_audio_at or time.perf_counter()) - lead.record.sent_at
    unmade = _unmade(left)
    await conv.close()
    if not unmade:
        return None
    busy = (cpu_first - cpu_sent) / max(first, 1e-3) if cpu_sent is not None and cpu_first is not None else 0.0
    return _Left(first, len(split_sentences(text)), busy)


@case("stop.client.1", "a message whose client left mid-synthesis stops being made: the CPU goes quiet",
      clauses=["TTS-SESSION", "TTS-ISOLATION"],
      expect=f"the client sends one sentence, then {ABANDONED_CHARS} characters, and leaves at the sentence's first "
             f"audio; {SETTLE_S:g} s (or one sentence's "
             "time, if longer) later the "
             f"container uses under {IDLE_CPU_SHARE:.0%} of a core over {SAMPLE_S:g} s; NOT-JUDGED when the suite "
             "did not start a local process for it (url, sagemaker, docker) or the message would have ended before the "
             "measurement anyway")
async def abandoned_work(ctx: CaseContext) -> Outcome:
    box = _watched(ctx)
    if not box.fine_cpu_meter:
        return not_judged(f"a {ctx.target.kind} target: its CPU statistics are sampled too coarsely for a "
                          f"{SAMPLE_S:g} s window (the reference read 0% once and 65% the next time)")
    left = await _leave_mid_message(ctx, box, long_text(ABANDONED_CHARS))
    if left is None:
        return not_judged("the long message's audio had begun by the lead sentence's first audio: the client could "
                          "not leave it unmade")
    first, to_come = left.first_s, left.to_come
    due = first * to_come  # what the rest would take at the first sentence's pace
    settle = max(SETTLE_S, first)  # the sentence in progress, at the first one's pace
    if due < settle + SAMPLE_S:
        return not_judged(f"the rest of the message ({to_come} sentences at {first * 1000:.0f} ms each) would "
                          f"have ended before the measurement ({settle + SAMPLE_S:.1f} s): no situation to judge")
    if left.busy_share <= 0.0:  # a quiet CPU after the client left would say nothing
        return not_judged(f"the container's CPU time did not move while it made the lead sentence ({first:.2f} s): "
                          "the meter sees none of its work")
    await asyncio.sleep(settle)
    measured = await _cpu_share(box, SAMPLE_S)
    if measured is None:
        raise CaseFailed("the container exited after a client left mid-message",
                         expected="the container keeps running", actual="exited")
    share, took = measured
    shown = (f"{share:.0%} of a core over {took:.1f} s, {settle:.1f} s after the client left with {to_come} "
             f"sentences (about {due:.1f} s of work) unmade ({left.busy_share:.0%} while it made the lead sentence)")
    if share > IDLE_CPU_SHARE:
        raise CaseFailed(f"work outlived its client: with no session open the container used {shown}: the "
                         "abandoned message is still being made", expected=f"under {IDLE_CPU_SHARE:.0%} of a core",
                         actual=f"{share:.0%} of a core")
    return ok(shown)


@case("stop.sigterm.1", "SIGTERM mid-synthesis: the container exits within SageMaker's grace period",
      clauses=["SM-STOP"],
      expect=f"the process exits within {GRACE_S:g} s of a SIGTERM sent at a lead sentence's first audio, a "
             "2-sentence message queued behind it (the "
             "platform then sends SIGKILL), finishing that message or closing the session with a close frame (1001), "
             "never cutting it; NOT-JUDGED when the suite did not start the container (url, "
             "sagemaker) or the queued message had begun to arrive before SIGTERM. Ends the container: the last "
             "case of a run")
async def sigterm(ctx: CaseContext) -> Outcome:
    box = _watched(ctx)
    already = (await _cpu_share(box, 0.5) or (0.0, 0.0))[0]  # another case's leftover work, said with a failure
    reach = await asyncio.to_thread(box.sigterm_reach)  # read now: once it has exited, there is nothing to read
    # A short message: a good container may finish it before it exits (the reference drains its
    # sessions), and the run should not wait for a long one.
    conv = await ctx.conversation(patience=2)
    lead, queued = await _send_behind_a_lead(conv, SENTENCE + " " + SENTENCE)
    mid = lead.error is None and queued.error is None and _unmade(queued)
    await asyncio.to_thread(box.terminate)
    sent = time.perf_counter()
    reader = asyncio.create_task(conv.pump_until(lambda: False, total=GRACE_S))  # the session's end, if any
    try:
        exited = await _exits_within(box, GRACE_S)
        if exited and not reader.done():  # the session's end comes with the exit: give it a moment to arrive
            await asyncio.wait({reader}, timeout=END_SEEN_S)
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
    took = time.perf_counter() - sent
    when = "mid-synthesis" if mid else "with no message running"
    if not exited:
        leftover = (f"; before this case it already used {already:.0%} of a core with no session of its own "
                    "open: work another case's client left, still being made" if already > IDLE_CPU_SHARE else "")
        why = f"; {reach}" if reach else ""
        raise CaseFailed(f"the container did not exit within {GRACE_S:g} s of SIGTERM (sent {when}): the "
                         f"platform would SIGKILL it, cutting every session without a close{why}{leftover}",
                         expected=f"exit within {GRACE_S:g} s", actual=f"still running after {took:.1f} s")
    if not mid:  # an idle container that exits says nothing of one stopped mid-synthesis
        return not_judged(f"the queued message was answered (or refused) by the lead's first audio, so SIGTERM came "
                          f"with no synthesis running "
                          f"(the container exited {took:.2f} s later)")
    closed, unfinished = conv.closed, queued.record.completed_at is None and queued.error is None
    if unfinished and closed is not None and closed.code in (None, 1006):
        said = f"; {reach}" if reach else ""
        raise CaseFailed(f"the container exited {took:.2f} s after SIGTERM (sent {when}) but cut its session: the "
                         f"queued message unfinished, the container {describe_close(closed)}, where SM-STOP "
                         f"asks it to finish its sessions or close them with 1001{said}",
                         expected="the message finished, or a close frame (1001)", actual=describe_close(closed))
    ended = ("the message finished" if queued.record.completed_at is not None else
             describe_close(closed) if closed is not None else "the session's end not seen")
    return ok(f"exited {took:.2f} s after SIGTERM (sent {when}); {ended}")


async def _cpu_share(box: Watched, over_s: float) -> tuple[float, float] | None:
    """(the container's CPU in cores, the seconds it was read over) over about `over_s`; None once gone."""
    before, start = await asyncio.to_thread(box.cpu_seconds), time.perf_counter()
    await asyncio.sleep(over_s)
    after, took = await asyncio.to_thread(box.cpu_seconds), time.perf_counter() - start
    if before is None or after is None:
        return None
    return (after - before) / took, took


async def _exits_within(box: Watched, seconds: float) -> bool:
    step = 0.05
    for _ in range(int(seconds / step) + 1):
        if await asyncio.to_thread(box.has_exited):
            return True
        await asyncio.sleep(step)
    return await asyncio.to_thread(box.has_exited)
