"""Timeouts measured on the container itself, and the probe that tells a quiet container from a busy one.

A fixed timeout is wrong both ways: long enough for a slow CPU container, it makes every case wait
it out against a broken one. So the run starts by timing a few short messages: the longest silence
seen (time to first audio, the gap between sentences), times a margin, with a floor and a ceiling,
becomes the silence a case allows while a frame is due. The same probe, repeated between cases,
shows whether a case left the container busy (a runaway synthesis) before the next one starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from bidi_tts.transports.base import ConnectError, TransportError
from bidi_tts_conformance.diagnose import describe_close, describe_connect_error
from bidi_tts_conformance.driver import Conversation, Reply
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.targets import Target

PROBE_TEXT = "Hi."
# Two sentences, the second as long as the longest sentence of any case text (about 60 characters):
# the longest unit of work sets the longest silence a good container may leave.
GAP_TEXT = "The first one is short. Somewhere a radio played an old song about the sea."
MARGIN = 4.0  # silence allowed = MARGIN x the slowest silence measured (+ 0.5 s)
FLOOR_S = 2.0
CEILING_S = 60.0
FIRST_ANSWER_S = 60.0  # the calibration's own wait for a first answer from an unknown container
# When the container answered nothing to calibrate on (it will hardly answer a case either), the
# floor: each case then fails in seconds instead of waiting out a long timeout.
FALLBACK_S = FLOOR_S


@dataclass(frozen=True, slots=True)
class Calibration:
    """What the run measured on the container and the timeouts it chose."""

    silence: float  # the longest silence allowed while a frame is due
    probe_ttfa_s: float | None  # "Hi." on a quiet, warm container: the baseline of the quiet probe
    slowest_silence_s: float | None
    problem: str | None = None  # why the measurement is partial (reported in the run's header)
    # The silence after which a message whose audio stopped counts as ended without synthesis_complete:
    # the full reply timeout, unless the container was seen to send none (then a few gaps' worth).
    end_silence: float | None = None
    # The same for a message of a few words, whose audio comes in one burst: a few in-burst gaps' worth.
    end_silence_one: float | None = None
    # The container's own error when it refused the short messages: it cannot synthesize at all.
    refusal: str | None = None

    def case_timeout(self) -> float:
        return min(300.0, max(60.0, 25 * self.silence))

    def summary(self) -> str:
        if self.probe_ttfa_s is None:
            return f"calibration failed ({self.problem}); silence allowed {self.silence:.1f} s"
        partial = f"; {self.problem}" if self.problem else ""
        if self.end_silence is not None:
            partial += (f" (a message whose audio stops counts as ended after {self.end_silence:.1f} s, "
                        f"{self.end_silence_one or self.end_silence:.2f} s for a few words)")
        return (f"calibrated: 'Hi.' first audio {self.probe_ttfa_s * 1000:.0f} ms, slowest silence "
                f"{(self.slowest_silence_s or 0) * 1000:.0f} ms -> silence allowed while a frame is due "
                f"{self.silence:.1f} s (x{MARGIN:g} + 0.5 s, floor {FLOOR_S:g}, ceiling {CEILING_S:g}; "
                f"--reply-timeout overrides){partial}")


def silence_for(slowest_silence_s: float) -> float:
    return min(CEILING_S, max(FLOOR_S, MARGIN * slowest_silence_s + 0.5))


async def _open(target: Target, silence: float, voice: str, sample_rate: int,
                open_timeout: float = 10.0) -> Conversation:
    transport = await target.connect(open_timeout=open_timeout)
    return Conversation(transport, silence=silence, voice=voice, sample_rate=sample_rate,
                        focus=frozenset())


def _answered(reply: Reply) -> Callable[[], bool]:
    return lambda: reply.answered


def _ended(reply: Reply) -> Callable[[], bool]:
    return lambda: reply.record.done


def _silences(sent_at: float, frame_times: list[float], end: float | None) -> list[float]:
    marks = [sent_at, *frame_times, *([end] if end is not None else [])]
    return [b - a for a, b in pairwise(marks)]


async def calibrate(target: Target, voice: str, sample_rate: int, *,
                    first_answer_s: float = FIRST_ANSWER_S) -> Calibration:
    """Time a warm-up, a short message and a two-sentence message on one session."""
    try:
        conv = await _open(target, first_answer_s, voice, sample_rate)
    except ConnectError as exc:
        return Calibration(FALLBACK_S, None, None, f"cannot open a session: {describe_connect_error(exc)}")
    silences: list[float] = []
    burst_gaps: list[float] = []  # between audio frames of one sentence
    problems: list[str] = []
    refusal: str | None = None
    ttfa: float | None = None
    try:
        for text in (PROBE_TEXT, PROBE_TEXT, GAP_TEXT):
            rid = await conv.synthesize(text)
            reply = conv.replies[rid]
            # An unknown container gets a long wait for its first answer, then a bounded one per frame.
            why = await conv.pump_until(_answered(reply), silence=first_answer_s)
            if why is not None:
                problems.append("no answer to a short message" if why == "silence" else
                                f"the container {describe_close(conv.closed)}" if conv.closed else why)
                break
            first = reply.record.first_audio_at or reply.record.started_at or time.perf_counter()
            per_frame = min(CEILING_S, max(5.0, 5 * (first - reply.record.sent_at)))
            why = await conv.pump_until(_ended(reply), silence=per_frame)
            record = reply.record
            if reply.error is not None:
                refusal = (f"error {reply.error.code or '(no code)'}"
                           + (f" {reply.error.message!r}" if reply.error.message else ""))
                problems.append(f"a short message was refused with {refusal}")
                break
            if record.first_audio_at is None:
                problems.append("no audio for a short message")
                break
            silences.extend(_silences(record.sent_at, record.frame_times, record.completed_at))
            if text == PROBE_TEXT:
                ttfa = record.first_audio_at - record.sent_at
                burst_gaps.extend(b - a for a, b in pairwise(record.frame_times))
            if why is not None:
                problems.append("no synthesis_complete after the audio" if why == "silence" else
                                f"the container {describe_close(conv.closed)}" if conv.closed else why)
                break
    except (TransportError, CaseFailed) as exc:
        problems.append(f"the session failed: {getattr(exc, 'detail', exc)}")
    finally:
        await conv.close()
    if ttfa is None or not silences:
        return Calibration(FALLBACK_S, None, None, "; ".join(problems) or "nothing measured", refusal=refusal)
    slowest = max(silences)
    silence = silence_for(slowest)
    if not any(p.startswith("no synthesis_complete") for p in problems):
        return Calibration(silence, ttfa, slowest, "; ".join(problems) or None)
    one = min(silence, 3 * max(burst_gaps, default=0.0) + 0.15)
    return Calibration(silence, ttfa, slowest, "; ".join(problems), min(silence, 2 * slowest + 0.3), one)


async def probe_ttfa(target: Target, voice: str, sample_rate: int, budget_s: float, *,
                     from_open: bool = False) -> float | None:
    """Time to first audio of 'Hi.' on a new session, or None when nothing answered within `budget_s`.
    `from_open`: timed from before the session opens (a stalled container stalls its handshake first),
    and the open may take the whole budget."""
    opened_at = time.perf_counter()
    try:
        conv = await _open(target, budget_s, voice, sample_rate, budget_s if from_open else 10.0)
    except ConnectError:
        return None
    try:
        rid = await conv.synthesize(PROBE_TEXT)
        reply = conv.replies[rid]
        await conv.pump_until(lambda: bool(reply.audio) or reply.record.done, silence=budget_s, total=budget_s)
        if from_open and reply.record.first_audio_at is not None:
            return reply.record.first_audio_at - opened_at
        return reply.record.ttfa_s
    except (TransportError, CaseFailed):
        return None
    finally:
        await conv.close()


def is_prompt(ttfa_s: float, baseline_s: float) -> bool:
    """A probe answered about as fast as on the quiet container at the start of the run."""
    return ttfa_s <= max(3 * baseline_s, baseline_s + 0.5)
