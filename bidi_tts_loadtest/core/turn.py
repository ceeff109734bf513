"""One conversation turn: an answer streamed as an LLM would, spoken over one session.

The simulated LLM emits the answer word by word ("tokens") at a fixed rate after a first-token
delay. In ``bidi`` mode every sentence goes out as a synthesize message the moment the chunker
(:mod:`bidi_tts.chunker`) releases it; in ``batch`` mode the whole answer goes out as one message
after the last token. One loop does both jobs on a blocking transport: it waits for the next frame
only until the next token is due, so sends keep to the token schedule and frames are stamped as
they come (no second thread or greenlet per session).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from bidi_tts.chunker import IncrementalSentenceChunker
from bidi_tts.frames import FrameKind
from bidi_tts.metrics import MessageMetrics, message_metrics
from bidi_tts.protocol import DEFAULT_SAMPLE_RATE, DEFAULT_VOICE, SynthesizeRequest
from bidi_tts.session import (
    AudioReceived,
    ClientSession,
    ErrorReceived,
    MessageRecord,
    ProtocolViolation,
    Severity,
    SynthesisCompleted,
)
from bidi_tts.transports.base import Frame, TransportClosed, TransportTimeout

_TOKEN = re.compile(r"\s*\S+")
_ids = itertools.count()


class SyncTransport(Protocol):
    """The blocking face of a transport that a turn needs."""

    def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> float:
        """Send one message; return the perf_counter() at which it left."""

    def receive(self, timeout: float | None = None) -> Frame:
        """Next frame, TransportTimeout when none within `timeout`, TransportClosed at the end."""


class ClosableSyncTransport(SyncTransport, Protocol):
    """A blocking transport that a session also closes (the load test's users, bidi_vs_batch)."""

    def wait_closed(self, timeout: float) -> TransportClosed:
        """Drain frames until the stream ends; TransportTimeout after `timeout` seconds."""

    def close(self) -> None:
        """Close the stream now (safe after it ended)."""


def tokenize(text: str) -> list[str]:
    """Split an answer into LLM-like tokens: each word with the whitespace before it."""
    return _TOKEN.findall(text)


@dataclass(slots=True)
class TurnConfig:
    """How the simulated LLM streams and how the turn is sent."""

    tokens_per_second: float = 40.0
    first_token_delay_s: float = 0.0
    mode: Literal["bidi", "batch"] = "bidi"
    voice: str = DEFAULT_VOICE
    sample_rate: int = DEFAULT_SAMPLE_RATE
    message_timeout_s: float = 30.0  # longest wait for any frame while a message is in flight
    keep_audio: bool = False


@dataclass(slots=True)
class TurnResult:
    """What happened in one turn. Times are perf_counter() values."""

    started_at: float
    records: list[MessageRecord] = field(default_factory=list)
    metrics: list[MessageMetrics] = field(default_factory=list)
    violations: list[ProtocolViolation] = field(default_factory=list)
    failure: str | None = None  # a stable word: "timeout", "closed"
    audio: dict[str, bytearray] = field(default_factory=dict)  # request_id -> PCM, with keep_audio

    @property
    def first_audio_at(self) -> float | None:
        times = [r.first_audio_at for r in self.records if r.first_audio_at is not None]
        return min(times) if times else None

    @property
    def turn_ttfa_s(self) -> float | None:
        """From the start of the turn (the LLM starting to answer) to the first audio of the turn."""
        first = self.first_audio_at
        return None if first is None else first - self.started_at

    @property
    def errors(self) -> int:
        """Messages that failed (error frame or unfinished) plus a turn-level failure."""
        failed = sum(1 for r in self.records if r.error_code is not None or r.completed_at is None)
        return failed if failed else (1 if self.failure else 0)


def release_schedule(answer: str, config: TurnConfig) -> list[tuple[float, str]]:
    """(seconds after the first token, message text) for every message of the turn, in order.

    Token i is emitted at i / tokens_per_second; a sentence is released when the token that
    completes it for the chunker is fed (bidi), or everything after the last token (batch).
    """
    tokens = tokenize(answer)
    if not tokens:
        return []
    rate = config.tokens_per_second
    last = (len(tokens) - 1) / rate
    if config.mode == "batch":
        return [(last, "".join(tokens).strip())]
    chunker = IncrementalSentenceChunker()
    out = [(i / rate, sentence) for i, token in enumerate(tokens) for sentence in chunker.feed(token)]
    tail = chunker.flush()
    return out + ([(last, tail)] if tail else [])


MessageCallback = Callable[[MessageRecord, MessageMetrics], None]


def run_turn(
    transport: SyncTransport,
    session: ClientSession,
    answer: str,
    config: TurnConfig,
    *,
    on_message: MessageCallback | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TurnResult:
    """Stream `answer` through the chunker onto `session` and wait for every message to finish.

    `on_message` is called as each message finishes (complete or error) with its metrics. A
    closed stream or a silent container ends the turn with `failure` set; nothing is raised.
    """
    result = TurnResult(started_at=clock())
    # The chunker is pure, so when each sentence is released is known up front: the loop wakes
    # only at those moments instead of at every token (far fewer wake-ups per session).
    schedule = release_schedule(answer, config)
    due0 = result.started_at + config.first_token_delay_s
    next_release = 0
    last_done_at: float | None = None
    last_progress = clock()
    reported: set[str] = set()

    def send(text: str) -> None:
        nonlocal last_progress
        request = SynthesizeRequest(text=text, voice=config.voice, sample_rate=config.sample_rate,
                                    request_id=f"m{next(_ids)}")
        payload = session.synthesize(request, at=clock())
        record = session.records[request.request_id]
        record.sent_at = transport.send(payload, kind=FrameKind.TEXT)
        result.records.append(record)
        last_progress = record.sent_at

    def finish(record: MessageRecord) -> None:
        nonlocal last_done_at
        metrics = message_metrics(record, ready_at=last_done_at)
        result.metrics.append(metrics)
        if record.completed_at is not None:
            last_done_at = record.completed_at
        if on_message is not None:
            on_message(record, metrics)

    def pending() -> int:
        return sum(1 for r in result.records if not r.done)

    try:
        while True:
            now = clock()
            while next_release < len(schedule) and due0 + schedule[next_release][0] <= now:
                send(schedule[next_release][1])
                next_release += 1
            feeding = next_release < len(schedule)
            if not feeding and not pending():
                return result
            if feeding:
                wait = max(0.0, due0 + schedule[next_release][0] - clock())
            else:
                wait = max(0.0, last_progress + config.message_timeout_s - clock())
            try:
                frame = transport.receive(timeout=wait)
            except TransportTimeout:
                if not feeding and pending() and clock() - last_progress >= config.message_timeout_s:
                    result.failure = "timeout"
                    return result
                continue
            last_progress = frame.received_at
            for event in session.receive_frame(frame):
                if isinstance(event, AudioReceived) and config.keep_audio:
                    result.audio.setdefault(event.request_id or "", bytearray()).extend(event.pcm)
                elif isinstance(event, (SynthesisCompleted, ErrorReceived)):
                    for record in result.records:  # in send order, which is finishing order (TTS-ORDER)
                        if record.done and record.request_id not in reported:
                            reported.add(record.request_id)
                            finish(record)
                elif isinstance(event, ProtocolViolation) and event.severity is Severity.ERROR:
                    result.violations.append(event)
    except TransportClosed:
        result.failure = "closed"
        return result

