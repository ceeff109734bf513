"""One message's audio, as it is made: plan units, queue them fairly, encode, cut into frames.

Shared by the WebSocket session and `POST /invocations`. Every unit of the message is queued at
once (the scheduler interleaves them with other sessions' units), and each unit's audio is yielded
as soon as its model call returns, so the first audio never waits for later sentences.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from bidi_tts import protocol
from reference_container.logs import kv
from reference_container.resample import PcmEncoder
from reference_container.scheduler import Job, Scheduler
from reference_container.segments import plan_segments

log = logging.getLogger(__name__)

FRAME_SECONDS = 0.1


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


async def message_audio(
    scheduler: Scheduler,
    request: protocol.SynthesizeRequest,
    stats: MessageStats,
    *,
    model_rate: int,
    first_clause_chars: int,
) -> AsyncIterator[bytes]:
    """PCM frames (s16le, ~100 ms) of one message; raises JobCancelled / JobFailed from the scheduler.

    The caller cancels the session's jobs (``scheduler.cancel_session``) when it stops early.
    """
    units = plan_segments(request.text, first_clause_chars)
    stats.units = len(units)
    stats.sample_rate = request.sample_rate
    stats.jobs = [scheduler.submit(stats.session_id, u, request.voice, request.speed) for u in units]
    encoder = PcmEncoder(model_rate, request.sample_rate)
    step = frame_bytes(request.sample_rate)
    pending = b""
    for job in stats.jobs:
        async for chunk in scheduler.stream(job):
            pending += encoder.feed(chunk)
            while len(pending) >= step:
                frame, pending = pending[:step], pending[step:]
                yield frame
            # Do not hold the tail of a unit back waiting for the next one: ship it now.
            if pending:
                frame, pending = pending, b""
                yield frame
    pending += encoder.flush()
    if pending:
        yield pending
