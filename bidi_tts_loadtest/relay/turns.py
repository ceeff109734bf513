"""One turn of the listen page over one upstream session, as events that do not know the shape.

A turn is what the page sends at once: a text spoken as one synthesize message, or, with
``tokens_per_second``, an answer streamed word by word as an LLM would and released sentence by
sentence through the chunker (the schedule of :func:`bidi_tts_loadtest.core.turn.release_schedule`). The relay
stamps its own clock (``perf_counter``) at each step, so the page can subtract the relay's share
from what it measured itself without the two clocks ever being compared.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from bidi_tts.frames import FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import AudioReceived, ClientSession, ErrorReceived, SynthesisCompleted, SynthesisStarted
from bidi_tts.transports.base import Transport, TransportClosed, TransportError, TransportTimeout
from bidi_tts_loadtest.core.turn import TurnConfig, release_schedule

_ids = itertools.count()
MAX_TEXT_CHARS = 20_000


class BadTurn(ValueError):
    """A turn request the relay refuses; the message is for people."""


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """The page's turn: the synthesize message (its fields and defaults are the protocol's) and its pacing."""

    message: SynthesizeRequest  # each message sent is this one with its text and its own request_id
    tokens_per_second: float | None = None  # None: the whole text is one synthesize message

    @property
    def text(self) -> str:
        return self.message.text

    @classmethod
    def from_json(cls, obj: Any) -> TurnRequest:
        """Check the page's JSON; the container checks voice, speed and rate itself."""
        if not isinstance(obj, dict):
            raise BadTurn("a turn is a JSON object")
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise BadTurn("text is required")
        if len(text) > MAX_TEXT_CHARS:
            raise BadTurn(f"text is longer than {MAX_TEXT_CHARS} characters")
        tps = obj.get("tokens_per_second")
        if tps is not None and (not isinstance(tps, (int, float)) or not math.isfinite(tps) or tps <= 0):
            raise BadTurn("tokens_per_second must be a positive number")
        given = {name: obj[name] for name in ("voice", "speed", "sample_rate") if name in obj}
        if not (isinstance(given.get("voice", ""), str) and isinstance(given.get("speed", 0.0), (int, float))
                and isinstance(given.get("sample_rate", 0), int)):
            raise BadTurn("voice must be a string, speed a number and sample_rate an integer")
        if "speed" in given:
            given["speed"] = float(given["speed"])
        return cls(SynthesizeRequest(text, **given), None if tps is None else float(tps))

    def schedule(self) -> list[tuple[float, str]]:
        """(seconds after the turn starts, message text) of every synthesize message."""
        if self.tokens_per_second is None:
            return [(0.0, self.text)]
        return release_schedule(self.text, TurnConfig(tokens_per_second=self.tokens_per_second))


@dataclass(frozen=True, slots=True)
class TurnStarted:
    sample_rate: int


@dataclass(frozen=True, slots=True)
class TurnAudio:
    pcm: bytes


@dataclass(frozen=True, slots=True)
class TurnDone:
    pass


@dataclass(frozen=True, slots=True)
class TurnFailed:
    code: str  # a stable word: the container's error code, or "timeout", "upstream_closed"
    message: str


TurnEvent = TurnStarted | TurnAudio | TurnDone | TurnFailed


@dataclass(slots=True)
class Turn:
    """The relay's clock readings for one turn (perf_counter seconds)."""

    request: TurnRequest
    received_at: float  # the page's request reached the relay
    connect_s: float = 0.0  # opening the upstream session, when this turn had to
    started_at: float = 0.0  # the schedule's zero (after any connect)
    first_sent_at: float | None = None
    first_audio_at: float | None = None  # first audio frame from upstream
    first_forwarded_at: float | None = None  # the shape finished writing it to the page
    done_at: float | None = None
    messages: int = 0
    audio_bytes: int = 0
    message_ttfa_s: list[float] = field(default_factory=list)

    def forwarded(self) -> None:
        """Called by the shape after it wrote the first audio of the turn."""
        if self.first_forwarded_at is None:
            self.first_forwarded_at = time.perf_counter()

    def timing_ms(self) -> dict[str, Any]:
        """The relay's share of the turn, in milliseconds (None where a step did not happen)."""

        def ms(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else (b - a) * 1000.0

        return {
            "upstream_connect": self.connect_s * 1000.0,
            # only a simulated LLM waits before the first send; otherwise that moment is the relay's own
            "llm_wait": ms(self.started_at, self.first_sent_at) if self.request.tokens_per_second else None,
            "container_first_byte": ms(self.first_sent_at, self.first_audio_at),
            "relay_forward": ms(self.first_audio_at, self.first_forwarded_at),
            "relay_first_byte": ms(self.received_at, self.first_forwarded_at),
            "relay_complete": ms(self.received_at, self.done_at),
            "messages": self.messages,
            "audio_bytes": self.audio_bytes,
            "message_ttfa": [s * 1000.0 for s in self.message_ttfa_s],
        }


class RelaySession:
    """One upstream session that runs the page's turns one after another."""

    def __init__(self, transport: Transport, *, message_timeout_s: float = 30.0) -> None:
        self.transport = transport
        self.session = ClientSession()
        self.message_timeout_s = message_timeout_s
        self.lock = asyncio.Lock()  # one turn at a time: the container streams messages in order
        self.broken = False
        self.last_used = time.monotonic()

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.transport.close(), 5.0)
        except (TransportError, TimeoutError, OSError):
            pass

    async def run(self, turn: Turn) -> AsyncGenerator[TurnEvent, None]:
        """Send the turn's messages on schedule and yield what comes back, ending with Done or Failed."""
        self.last_used = time.monotonic()
        turn.started_at = time.perf_counter()
        schedule = turn.request.schedule()
        sent: list[str] = []
        stop_sending = asyncio.Event()
        sender = asyncio.create_task(self._send_all(turn, schedule, sent, stop_sending))
        rate: int | None = None
        failure: TurnFailed | None = None
        try:
            while True:
                sending = not sender.done()
                if not sending and all(self.session.records[r].done for r in sent):
                    sender.result()  # re-raise a send failure
                    break
                try:
                    # while messages are still due, wake up often to notice the sender finishing
                    frame = await self.transport.receive(timeout=0.05 if sending else self.message_timeout_s)
                except TransportTimeout:
                    if not sending:
                        failure = TurnFailed("timeout", f"nothing from upstream for {self.message_timeout_s:g} s")
                        self.broken = True
                        break
                    continue
                for event in self.session.receive_frame(frame):
                    match event:
                        case SynthesisStarted(sample_rate=r) if rate is None:
                            rate = r
                            yield TurnStarted(r)
                        case SynthesisStarted(sample_rate=r) if r != rate:
                            failure = failure or TurnFailed("rate_changed", f"sample rate changed to {r} Hz")
                        case AudioReceived(pcm=pcm, at=at) if failure is None:
                            if turn.first_audio_at is None:
                                turn.first_audio_at = at
                            turn.audio_bytes += len(pcm)
                            yield TurnAudio(pcm)
                        case SynthesisCompleted():
                            self._note_ttfa(turn, sent)
                        case ErrorReceived(code=code, message=message):
                            stop_sending.set()  # drain what is already sent, send nothing more
                            failure = failure or TurnFailed(code or "error", message or "upstream error")
        except (TransportClosed, TransportError) as exc:
            self.broken = True
            failure = failure or TurnFailed("upstream_closed", f"upstream session ended: {exc}")
        finally:
            stop_sending.set()
            if not sender.done():
                sender.cancel()
        turn.done_at = time.perf_counter()
        yield failure or TurnDone()

    async def _send_all(self, turn: Turn, schedule: list[tuple[float, str]], sent: list[str],
                        stop: asyncio.Event) -> None:
        req = turn.request
        for offset, text in schedule:
            delay = turn.started_at + offset - time.perf_counter()
            if delay > 0:
                try:
                    await asyncio.wait_for(stop.wait(), delay)
                except TimeoutError:
                    pass
            if stop.is_set():
                return
            message = dataclasses.replace(req.message, text=text, request_id=f"relay{next(_ids)}")
            payload = self.session.synthesize(message, at=time.perf_counter())
            await self.transport.send(payload, kind=FrameKind.TEXT)
            at = time.perf_counter()
            self.session.records[message.request_id].sent_at = at
            sent.append(message.request_id)
            turn.messages += 1
            if turn.first_sent_at is None:
                turn.first_sent_at = at

    def _note_ttfa(self, turn: Turn, sent: list[str]) -> None:
        done = [self.session.records[r] for r in sent if self.session.records[r].completed_at is not None]
        turn.message_ttfa_s = [r.ttfa_s for r in done if r.ttfa_s is not None]
