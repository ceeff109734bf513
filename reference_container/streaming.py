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
from reference_container.segments import Pace, plan_units

log = logging.getLogger(__name__)

FRAME_SECONDS = 0.1
# Kokoro pads every unit with ~0.3 s of silence before and ~0.45 s after. Where a sentence was cut
# at its first clause, that is a 0.75 s hole mid-sentence; keep only a short, natural pause.
SILENCE_LEVEL = 0.01
JOIN_TAIL_S = 0.10
JOIN_LEAD_S = 0.03


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
    jobs: list[Job] = field(default_factory=list)

    def log(self, outcome: str) -> None:
        waits = [j.queue_wait_s for j in self.jobs if j.queue_wait_s is not None]
        synth = sum(j.synth_s or 0.0 for j in self.jobs)
        audio_s = self.audio_bytes / (2 * self.sample_rate)
        log.info(kv(
            event="message_done", session=self.session_id, request_id=self.request_id, outcome=outcome,
            units=self.units, queue_wait_s=waits[0] if waits else -1.0, synth_s=synth,
            first_audio_s=(self.first_audio_at - self.received_at) if self.first_audio_at else -1.0,
            total_s=time.perf_counter() - self.received_at, audio_s=audio_s,
            rtf=(synth / audio_s) if audio_s else -1.0,
        ))


def frame_bytes(sample_rate: int) -> int:
    """Bytes in one ~100 ms audio frame (always a whole number of samples)."""
    return max(2, int(sample_rate * FRAME_SECONDS) * 2)


def pace_for(scheduler: Scheduler, session_id: str) -> Pace:
    """The plan's view of this session: the scheduler's learned real-time factor (times the
    messages sharing each worker), speaking rate, and the audio the session's listener still holds."""
    estimate = scheduler.estimate
    sharing = max(1.0, scheduler.active_messages / max(1, scheduler.workers))
    return Pace(rtf=estimate.rtf * sharing, audio_s_per_char=estimate.audio_s_per_char,
                lead_s=scheduler.lead_s(session_id), margin_s=scheduler.deadline_margin_s)


async def message_audio(
    scheduler: Scheduler,
    request: protocol.SynthesizeRequest,
    stats: MessageStats,
    *,
    model_rate: int,
    first_clause_chars: int,
    paced: bool = True,
) -> AsyncIterator[bytes]:
    """PCM frames (s16le, ~100 ms) of one message; raises JobCancelled / JobFailed from the scheduler.

    Units are planned from the session's lead (:func:`pace_for`) unless `paced` is False. The first
    unit's leading near-silence is cut (:func:`reference_container.onset.trim_onset`); where a
    sentence was cut between two units, the model's padding at the cut is shortened to a short,
    natural pause. The caller cancels the session's jobs (``scheduler.cancel_session``) when it
    stops early.
    """
    pace = pace_for(scheduler, stats.session_id) if paced else None
    units = plan_units(request.text, first_clause_chars, pace)
    stats.units = len(units)
    stats.sample_rate = request.sample_rate
    stats.jobs = [scheduler.submit(stats.session_id, u.text, request.voice, request.speed) for u in units]
    encoder = PcmEncoder(model_rate, request.sample_rate)
    step = frame_bytes(request.sample_rate)
    pending = b""
    for index, job in enumerate(stats.jobs):
        # A unit whose sentence goes on in the next one: its tail is trimmed once we know which
        # chunk is its last, so one chunk is held back.
        hold_last = index + 1 < len(units) and units[index + 1].joined
        trim_lead = units[index].joined
        first_chunk = index == 0
        held: np.ndarray | None = None
        async for chunk in scheduler.stream(job):
            if first_chunk:
                chunk, first_chunk = trim_onset(chunk, model_rate), False
            if trim_lead:
                chunk, trim_lead = trim_leading_silence(chunk, JOIN_LEAD_S, model_rate), False
            if hold_last:
                previous, held = held, chunk
                if previous is None:
                    continue
                chunk = previous
            pending += encoder.feed(chunk)
            while len(pending) >= step:
                frame, pending = pending[:step], pending[step:]
                yield frame
            # Do not hold the tail of a unit back waiting for the next one: ship it now.
            if pending:
                frame, pending = pending, b""
                yield frame
        if held is not None:
            pending += encoder.feed(trim_trailing_silence(held, JOIN_TAIL_S, model_rate))
            while len(pending) >= step:
                frame, pending = pending[:step], pending[step:]
                yield frame
    pending += encoder.flush()
    if pending:
        yield pending
