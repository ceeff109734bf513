"""One message's audio, as it is made: plan units to the listener's lead, queue them fairly, trim the
first unit's leading silence, encode, cut into frames.

Shared by the WebSocket session and `POST /invocations`. Every unit of the message is queued at
once (the scheduler interleaves them with other sessions' units), and each unit's audio is yielded
as soon as its model call returns, so the first audio never waits for later sentences.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import numpy as np

from bidi_tts import protocol
from reference_container.logs import kv
from reference_container.onset import trim_onset
from reference_container.resample import PcmEncoder
from reference_container.scheduler import Job, Scheduler
from reference_container.segments import JOIN_LEAD_S, MARGIN_S, SLACK, Pace, join_tail_s, plan_units
from reference_container.unit_cost import UnitCost

log = logging.getLogger(__name__)

FRAME_SECONDS = 0.1
# Kokoro pads every unit with ~0.3 s of silence before and ~0.45 s after. Where a sentence was cut
# between two units, that is a 0.75 s hole mid-sentence; keep only a short, natural pause
# (segments.join_tail_s of the head's tail, segments.JOIN_LEAD_S of the rest's lead).
SILENCE_LEVEL = 0.01
# The plan's margin and slack (segments.MARGIN_S, SLACK) widen to SPREADS times the scatter the
# container measured of its own predictions (UnitCost.synth_spread, audio_spread_s): two spreads
# cover about 95% of calls.
SPREADS = 2.0


def trim_trailing_silence(audio: np.ndarray, keep_s: float, rate: int) -> np.ndarray:
    """Drop trailing samples under SILENCE_LEVEL, keeping `keep_s` of them."""
    loud = np.flatnonzero(np.abs(audio) > SILENCE_LEVEL)
    end = len(audio) if not len(loud) else min(len(audio), int(loud[-1]) + 1 + int(keep_s * rate))
    return audio[:end]


def trim_leading_silence(audio: np.ndarray, keep_s: float, rate: int) -> np.ndarray:
    """Drop leading samples under SILENCE_LEVEL, keeping `keep_s` of them."""
    loud = np.flatnonzero(np.abs(audio) > SILENCE_LEVEL)
    start = 0 if not len(loud) else max(0, int(loud[0]) - int(keep_s * rate))
    return audio[start:]


@dataclass(slots=True)
class MessageStats:
    """Timings of one message, logged when it ends."""

    session_id: str
    request_id: str
    received_at: float = field(default_factory=time.perf_counter)
    first_audio_at: float | None = None
    units: int = 0
    audio_bytes: int = 0
    sample_rate: int = protocol.DEFAULT_SAMPLE_RATE
    lead_s: float = -1.0  # what the listener held when the units were planned (-1: not paced)
    jobs: list[Job] = field(default_factory=list)

    def log(self, outcome: str) -> None:
        waits = [j.queue_wait_s for j in self.jobs if j.queue_wait_s is not None]
        synth = sum(j.synth_s or 0.0 for j in self.jobs)
        audio_s = self.audio_bytes / (2 * self.sample_rate)
        log.info(kv(
            event="message_done", session=self.session_id, request_id=self.request_id, outcome=outcome,
            units=self.units, lead_s=self.lead_s, queue_wait_s=waits[0] if waits else -1.0, synth_s=synth,
            first_audio_s=(self.first_audio_at - self.received_at) if self.first_audio_at else -1.0,
            total_s=time.perf_counter() - self.received_at, audio_s=audio_s,
            rtf=(synth / audio_s) if audio_s else -1.0,
        ))


def frame_bytes(sample_rate: int) -> int:
    """Bytes in one ~100 ms audio frame (always a whole number of samples)."""
    return max(2, int(sample_rate * FRAME_SECONDS) * 2)


def pace_for(scheduler: Scheduler, cost: UnitCost, session_id: str, speed: float = 1.0) -> Pace:
    """The plan's view of this session: what a unit costs on this machine (times the messages
    sharing each worker), how fast it speaks at `speed`, and what the session's listener holds
    (the scheduler's playback clock, :meth:`Scheduler.lead_s`)."""
    sharing = max(1.0, scheduler.active_messages / max(1, scheduler.workers))
    speed = max(speed, 1e-3)
    return Pace(call_s=cost.call_s * sharing, char_s=cost.char_s * sharing / speed,
                speech_s_per_char=cost.speech_s_per_char / speed, lead_s=scheduler.lead_s(session_id),
                margin_s=MARGIN_S + SPREADS * cost.audio_spread_s / speed,
                slack=max(SLACK, SPREADS * cost.synth_spread),
                lead_pad_s=cost.lead_pad_s / speed, tail_pad_s=cost.tail_pad_s / speed)


async def message_audio(
    scheduler: Scheduler,
    request: protocol.SynthesizeRequest,
    stats: MessageStats,
    *,
    model_rate: int,
    first_clause_chars: int,
    cost: UnitCost | None = None,
    paced: bool = True,
) -> AsyncIterator[bytes]:
    """PCM frames (s16le, ~100 ms) of one message; raises JobCancelled / JobFailed from the scheduler.

    Units are planned from what a unit costs (`cost`, which every finished unit updates) and what
    the session's listener holds (:func:`pace_for`) unless `paced` is False or `cost` is None. The
    first unit's leading near-silence is cut (:func:`reference_container.onset.trim_onset`); where a
    sentence was cut between two units, the model's padding at the cut is shortened to a short,
    natural pause. Every frame is counted on the session's playback clock (:meth:`Scheduler.sent`)
    when it is yielded: the clock counts what the listener gets, not the model's audio with the
    padding that is cut, and the deadline policy reads the same clock. The caller cancels the
    session's jobs (``scheduler.cancel_session``) when it stops early.
    """
    session = stats.session_id
    pace = pace_for(scheduler, cost, session, request.speed) if paced and cost is not None else None
    units = plan_units(request.text, first_clause_chars, pace)
    stats.units = len(units)
    stats.sample_rate = request.sample_rate
    stats.lead_s = pace.lead_s if pace is not None else -1.0
    stats.jobs = [scheduler.submit(session, u.text, request.voice, request.speed, reader_reports_sent=True)
                  for u in units]
    encoder = PcmEncoder(model_rate, request.sample_rate)
    step = frame_bytes(request.sample_rate)
    bytes_per_s = 2.0 * request.sample_rate
    pending = b""
    for index, (unit, job) in enumerate(zip(units, stats.jobs, strict=True)):
        # A unit whose sentence goes on in the next one: its tail is trimmed once we know which
        # chunk is its last, so one chunk is held back.
        hold_last = index + 1 < len(units) and units[index + 1].joined
        trim_lead = unit.joined
        first_chunk = index == 0
        held: np.ndarray | None = None
        made: list[np.ndarray] = []
        lead_at_ready = -1.0
        async for chunk in scheduler.stream(job):
            if not made:
                lead_at_ready = scheduler.lead_s(session)
            made.append(chunk)
            if first_chunk:
                chunk, first_chunk = trim_onset(chunk, model_rate), False
            if trim_lead:
                chunk, trim_lead = trim_leading_silence(chunk, JOIN_LEAD_S, model_rate), False
            if hold_last:
                previous, held = held, chunk
                if previous is None:
                    continue
                chunk = previous
            # Do not hold the tail of a unit back waiting for the next one: ship it now.
            frames, pending = split_frames(pending + encoder.feed(chunk), step, ship_rest=True)
            for frame in frames:
                scheduler.sent(session, len(frame) / bytes_per_s)
                yield frame
        if held is not None:
            tail = encoder.feed(trim_trailing_silence(held, join_tail_s(unit.text), model_rate))
            frames, pending = split_frames(pending + tail, step, ship_rest=False)
            for frame in frames:
                scheduler.sent(session, len(frame) / bytes_per_s)
                yield frame
        audio = np.concatenate(made) if made else np.zeros(0, np.float32)
        if cost is not None and job.synth_s is not None:
            cost.observe(len(unit.text) / max(request.speed, 1e-3), job.synth_s, audio, model_rate)
        log.info(kv(
            event="unit_done", session=stats.session_id, request_id=stats.request_id, unit=index,
            chars=len(unit.text), joined=unit.joined, queue_wait_s=job.queue_wait_s or 0.0,
            synth_s=job.synth_s or 0.0,
            predicted_s=pace.synth_s(unit.text) if pace is not None else -1.0,
            audio_s=len(audio) / model_rate, lead_at_ready_s=lead_at_ready,
            # negative is predicted silence, so an unplanned unit says none rather than -1
            planned_lead_s=unit.planned_lead_s if unit.planned_lead_s is not None else "none",
            slack=pace.slack if pace is not None else -1.0,
            margin_s=pace.margin_s if pace is not None else -1.0,
        ))
    pending += encoder.flush()
    if pending:
        scheduler.sent(session, len(pending) / bytes_per_s)
        yield pending


def split_frames(data: bytes, step: int, *, ship_rest: bool) -> tuple[list[bytes], bytes]:
    """`data` cut into frames of `step` bytes, and what is left (shipped as a last, shorter frame
    when `ship_rest`)."""
    cut = len(data) - len(data) % step
    frames = [data[i : i + step] for i in range(0, cut, step)]
    rest = data[cut:]
    if ship_rest and rest:
        frames.append(rest)
        rest = b""
    return frames, rest
