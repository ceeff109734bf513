"""The measurement of a calibration: each text sent alone over one session and waited for, so nothing
queues; its units replayed as the reference container cuts them (:mod:`bidi_tts.chunker`).

Start the reference container with ``--first-clause-chars 0`` for a calibration (else every first
unit is 40 characters or less and the lengths do not spread); give ``--first-clause-chars N`` here
when the container cuts.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bidi_tts.chunker import first_clause_split, split_sentences
from bidi_tts.deadline import Deadline
from bidi_tts.protocol import DEFAULT_SAMPLE_RATE, SynthesizeRequest
from bidi_tts.session import ClientSession
from bidi_tts.transports.base import TransportTimeout
from bidi_tts.transports.websocket_sync import SyncWebSocketTransport
from bidi_tts_loadtest.capacity.calibration.fit import Observation
from bidi_tts_loadtest.core.corpus import load_answers

BYTES_PER_S = 2 * DEFAULT_SAMPLE_RATE


def calibration_texts(count: int = 10) -> list[str]:
    """Sentences of the load test's corpus at evenly spaced lengths, and two messages of several
    sentences. Only real sentences: plain word lists speak without the pauses of punctuation and
    pulled the fitted audio per character down (and the per-unit audio up)."""
    sentences = sorted({s for answer in load_answers() for s in split_sentences(answer)}, key=lambda s: (len(s), s))
    picks = [sentences[round(i * (len(sentences) - 1) / (count - 1))] for i in range(count)]
    return [*picks, f"{picks[1]} {picks[5]} {picks[8]}", f"{picks[3]} {picks[6]} {picks[2]} {picks[9]}"]


def plan_units(text: str, first_clause_chars: int = 0) -> list[str]:
    """The reference container's units of one message (:mod:`reference_container.segments`)."""
    sentences = [s for s in (split_sentences(text) or [text]) if s.strip()]
    if sentences and first_clause_chars > 0 and (split := first_clause_split(sentences[0], first_clause_chars)):
        return [*split, *sentences[1:]]
    return sentences


def measure(url: str, texts: list[str], repeats: int, *, first_clause_chars: int = 0, timeout_s: float = 60.0,
            progress: Callable[[str], None] = lambda _: None) -> list[Observation]:
    """Send each text alone, `repeats` times, over one session; TTFA, completion and audio of each."""
    transport = SyncWebSocketTransport.open(url)
    session = ClientSession()
    out: list[Observation] = []
    try:
        for r in range(repeats + 1):  # the first round warms the container up and is dropped
            for i, text in enumerate(texts):
                request = SynthesizeRequest(text=text, request_id=f"cal-{r}-{i}")
                payload = session.synthesize(request, at=time.perf_counter())
                record = session.records[request.request_id]
                record.sent_at = transport.send(payload)
                deadline = Deadline(timeout_s)
                while not record.done:
                    if deadline.expired:
                        raise TimeoutError(f"no answer to a calibration message within {timeout_s:.0f} s")
                    try:
                        frame = transport.receive(timeout=max(0.01, deadline.remaining()))
                    except TransportTimeout:
                        continue
                    session.receive_frame(frame)
                if record.error_code is not None:
                    raise RuntimeError(f"the container answered error {record.error_code!r}")
                if r == 0 or record.first_audio_at is None or record.completed_at is None:
                    continue
                out.append(Observation([len(u) for u in plan_units(text, first_clause_chars)],
                                       record.first_audio_at - record.sent_at, record.audio_bytes / BYTES_PER_S))
            if r:
                progress(f"round {r}/{repeats}: {len(out)} messages measured")
    finally:
        transport.close()
    return out
