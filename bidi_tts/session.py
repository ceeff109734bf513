"""The client session state machine, sans I/O.

Frames go in through :meth:`ClientSession.receive_frame`; typed events come out. The same object
checks the ordering rules of CONTRACT.md (TTS-ORDER, TTS-AUDIO, TTS-CLASSIFY) and keeps a
per-message timing record, whatever transport moved the bytes. Modelled on the sans-I/O shape of
python-websockets' ``Protocol``: no sockets, no clocks of its own (every timestamp comes in with
the frame or the call).

Two kinds of wrong, kept apart as in h11: what the container does wrong is a
:class:`ProtocolViolation`, recorded and returned, never raised; what the caller does wrong (a move
its :class:`SessionState` does not allow, see :data:`TRANSITIONS`) raises :class:`LocalProtocolError`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bidi_tts.audio import WrapDetector, first_audible_sample
from bidi_tts.frames import Frame, FrameClass
from bidi_tts.protocol import (
    CHANNELS,
    DEFAULT_SAMPLE_RATE,
    SAMPLE_WIDTH_BYTES,
    ControlType,
    MessageType,
    SynthesizeRequest,
)


class Severity(StrEnum):
    ERROR = "error"  # breaks a MUST of the contract
    WARNING = "warning"  # bends a SHOULD (e.g. request_id not echoed)


class Rule(StrEnum):
    """Which rule a violation breaks: a stable name finer than a clause, so that a checker can judge
    one rule and only note the others (a conformance case fails only for the rule it is about)."""

    START_SAMPLE_RATE = "start.sample_rate"  # synthesis_start without a valid sample_rate
    START_OVERLAP = "start.overlap"  # synthesis_start before the previous synthesis_complete
    START_UNSOLICITED = "start.unsolicited"  # synthesis_start with no message pending
    START_REQUEST_ID = "start.request_id"  # synthesis_start does not echo the request_id
    AUDIO_OUTSIDE = "audio.outside"  # audio outside synthesis_start/synthesis_complete
    AUDIO_ODD_LENGTH = "audio.odd_length"  # not a whole number of 16-bit samples
    AUDIO_EMPTY = "audio.empty"  # an empty audio frame
    AUDIO_WRAPPED = "audio.wrapped"  # a sample wrapped around from near full scale to the opposite sign
    TEXT_NOT_JSON = "text.not_json"  # a TEXT frame (opcode/DataType) that is not a JSON object
    AUDIO_IN_JSON = "audio.in_json"  # audio as base64 inside a JSON control frame
    CONTROL_UNKNOWN = "control.unknown"  # a control frame of unknown type
    COMPLETE_UNSTARTED = "complete.unstarted"  # synthesis_complete without synthesis_start
    COMPLETE_NO_AUDIO = "complete.no_audio"  # synthesis_complete with no audio before it
    COMPLETE_BYTES = "complete.audio_bytes"  # audio_bytes differs from the bytes received
    COMPLETE_BYTES_MISSING = "complete.audio_bytes_missing"  # no integer audio_bytes
    ERROR_NO_CODE = "error.no_code"
    ERROR_NO_MESSAGE = "error.no_message"
    ERROR_AFTER_START = "error.after_start"  # an input error after synthesis_start


@dataclass(frozen=True, slots=True)
class SynthesisStarted:
    request_id: str | None
    sample_rate: int
    control: dict[str, Any]
    at: float


@dataclass(frozen=True, slots=True)
class AudioReceived:
    request_id: str | None
    pcm: bytes
    at: float


@dataclass(frozen=True, slots=True)
class SynthesisCompleted:
    request_id: str | None
    audio_bytes_reported: int | None
    audio_bytes_received: int
    duration_s: float | None
    cancelled: bool
    control: dict[str, Any]
    at: float


@dataclass(frozen=True, slots=True)
class ErrorReceived:
    request_id: str | None
    code: str | None
    message: str | None
    control: dict[str, Any]
    at: float


@dataclass(frozen=True, slots=True)
class ProtocolViolation:
    clause: str
    description: str
    severity: Severity
    at: float
    rule: Rule


@dataclass(frozen=True, slots=True)
class SessionClosed:
    code: int | None
    reason: str
    at: float


SessionEvent = SynthesisStarted | AudioReceived | SynthesisCompleted | ErrorReceived | ProtocolViolation | SessionClosed


class SessionState(StrEnum):
    IDLE = "idle"  # nothing in flight, or only requests whose start has not arrived
    STREAMING = "streaming"  # between synthesis_start and synthesis_complete
    CLOSING = "closing"  # close requested by the client, waiting for the container to close
    CLOSED = "closed"


class Move(StrEnum):
    """What moves a session: the caller's sends and what arrives."""

    SEND_MESSAGE = "send a message"  # synthesize()
    SEND_CLOSE = "send close"  # close()
    RECEIVE_FRAME = "receive a frame"  # receive_frame(), any frame
    START = "synthesis_start arrives"
    END = "the message ends"  # synthesis_complete, or an error ending the current message
    GIVE_UP = "give up the current message"  # give_up_current()
    CONNECTION_CLOSED = "the connection closes"  # connection_closed()


def _row(*following: SessionState | None) -> dict[Move, SessionState]:
    """One state's row of :data:`TRANSITIONS`: the next state per move, in :class:`Move` order;
    None marks an illegal move."""
    return {move: state for move, state in zip(Move, following, strict=True) if state is not None}


_I, _S, _CLOSING, _CLOSED = SessionState.IDLE, SessionState.STREAMING, SessionState.CLOSING, SessionState.CLOSED
#: state -> {move: next state}. A move missing from its state's row (None below) raises LocalProtocolError.
TRANSITIONS: dict[SessionState, dict[Move, SessionState]] = {
    #              SEND_MESSAGE SEND_CLOSE RECEIVE_FRAME START     END       GIVE_UP   CONNECTION_CLOSED
    _I:       _row(_I,          _CLOSING,  _I,           _S,       _I,       _I,       _CLOSED),
    _S:       _row(_S,          _CLOSING,  _S,           _S,       _I,       _I,       _CLOSED),
    _CLOSING: _row(None,        None,      _CLOSING,     _CLOSING, _CLOSING, _CLOSING, _CLOSED),
    _CLOSED:  _row(None,        None,      None,         None,     None,     _CLOSED,  None),
}  # fmt: skip


class LocalProtocolError(Exception):
    """The caller made a move its session's state does not allow (h11's ``LocalProtocolError``):
    a bug in the client, never something the container did (that is a :class:`ProtocolViolation`)."""

    def __init__(self, message: str, *, state: SessionState, move: Move) -> None:
        self.state, self.move = state, move
        super().__init__(message)


@dataclass(slots=True)
class MessageRecord:
    """Timings and totals of one synthesize message, in the clock of the caller (transports stamp
    frames with ``time.perf_counter()``, so callers send with it too)."""

    request_id: str
    text: str
    sent_at: float
    started_at: float | None = None
    first_audio_at: float | None = None
    #: byte offset in the message's audio of its first audible sample (bidi_tts.audio.AUDIBLE_DBFS)
    first_audible_byte: int | None = None
    completed_at: float | None = None
    sample_rate: int = DEFAULT_SAMPLE_RATE
    audio_bytes: int = 0
    frame_times: list[float] = field(default_factory=list)
    frame_sizes: list[int] = field(default_factory=list)
    error_code: str | None = None
    cancelled: bool = False
    given_up: bool = False  # the client stopped waiting for a synthesis_complete that never came
    #: wrapped samples in the message's audio (bidi_tts.audio.find_wraps), counted from its first sample
    wraps: WrapDetector = field(default_factory=WrapDetector)

    @property
    def done(self) -> bool:
        return self.completed_at is not None or self.error_code is not None or self.given_up

    @property
    def ttfa_s(self) -> float | None:
        """Time to first audio: from the send to the first audio frame (not synthesis_start)."""
        return None if self.first_audio_at is None else self.first_audio_at - self.sent_at

    @property
    def complete_s(self) -> float | None:
        return None if self.completed_at is None else self.completed_at - self.sent_at

    @property
    def audio_seconds(self) -> float:
        return self.audio_bytes / (SAMPLE_WIDTH_BYTES * CHANNELS * self.sample_rate)


class ClientSession:
    """Tracks one session: what was sent, what arrived, and whether it followed the contract."""

    def __init__(self) -> None:
        self.state = SessionState.IDLE
        self.records: dict[str, MessageRecord] = {}
        self.violations: list[ProtocolViolation] = []
        self._pending: deque[str] = deque()  # sent, not yet started/answered, in send order
        self._current: MessageRecord | None = None
        self.close_code: int | None = None
        self.close_reason: str = ""

    # -- state ----------------------------------------------------------------------------------
    def _move(self, move: Move, *, on_purpose: bool = False) -> None:
        """Take `move` by :data:`TRANSITIONS`; an illegal one raises, unless it is made `on_purpose`
        (a conformance suite breaks the client's rules to see what the container does): then the
        state stays as it is."""
        following = TRANSITIONS[self.state].get(move)
        if following is not None:
            self.state = following
        elif not on_purpose:
            allowed = ", ".join(m.value for m in TRANSITIONS[self.state]) or "nothing"
            raise LocalProtocolError(f"cannot {move.value} in state {self.state.value} (allowed: {allowed})",
                                     state=self.state, move=move)

    # -- outgoing -------------------------------------------------------------------------------
    def synthesize(self, request: SynthesizeRequest, *, at: float, on_purpose: bool = False) -> str:
        """Record a synthesize message about to be sent `at` (the caller's clock); returns its JSON
        payload. LocalProtocolError after :meth:`close` or the connection's end, or for a request_id
        used before; `on_purpose` records a message sent after close anyway (a probe of the container)."""
        if request.request_id in self.records:
            raise LocalProtocolError(f"request_id {request.request_id!r} already used in this session",
                                     state=self.state, move=Move.SEND_MESSAGE)
        self._move(Move.SEND_MESSAGE, on_purpose=on_purpose)
        self.records[request.request_id] = MessageRecord(
            request.request_id,
            request.text,
            at,
            sample_rate=request.sample_rate,
        )
        self._pending.append(request.request_id)
        return request.to_json()

    def close(self, *, on_purpose: bool = False) -> str:
        """Record an explicit close; returns the JSON payload to send. LocalProtocolError when close
        was already sent or the connection has ended, unless sent again `on_purpose`."""
        self._move(Move.SEND_CLOSE, on_purpose=on_purpose)
        return json.dumps({"type": MessageType.CLOSE.value})

    # -- incoming -------------------------------------------------------------------------------
    def receive_frame(self, frame: Frame) -> list[SessionEvent]:
        """Check one frame from the container; the events it makes. LocalProtocolError after
        :meth:`connection_closed` (nothing arrives on a closed connection)."""
        self._move(Move.RECEIVE_FRAME)
        kind, control = frame.classify()
        at = frame.received_at
        if kind is FrameClass.INVALID:
            return [self._violate(Rule.TEXT_NOT_JSON, "TTS-AUDIO", "a TEXT frame that is not a JSON object", at)]
        if kind is FrameClass.AUDIO:
            return self._on_audio(frame.payload, at)
        assert control is not None
        match control.get("type"):
            case ControlType.SYNTHESIS_START:
                return self._on_start(control, at)
            case ControlType.SYNTHESIS_COMPLETE:
                return self._on_complete(control, at)
            case ControlType.ERROR:
                return self._on_error(control, at)
            case other if (pcm := _audio_in_json(control)) is not None:
                # A known mistake (audio as base64 in JSON, as in SSE APIs): count the audio, so that
                # everything else about the message can still be checked, and say what was wrong.
                violation = self._violate(
                    Rule.AUDIO_IN_JSON,
                    "TTS-AUDIO",
                    f"audio inside a JSON control frame of type {other!r} (base64), not in a BINARY frame",
                    at,
                )
                return [violation, *self._on_audio(pcm, at)]
            case other:
                return [
                    self._violate(
                        Rule.CONTROL_UNKNOWN,
                        "TTS-CLASSIFY",
                        f"control frame of unknown type {other!r}",
                        at,
                        Severity.WARNING,
                    )
                ]

    def connection_closed(self, code: int | None, reason: str = "", *, at: float) -> SessionClosed:
        """The connection ended `at`; LocalProtocolError when told twice."""
        self._move(Move.CONNECTION_CLOSED)
        self.close_code, self.close_reason = code, reason
        return SessionClosed(code, reason, at)

    def give_up_current(self) -> MessageRecord | None:
        """Stop waiting for the current message's synthesis_complete (it never came): frames that
        follow belong to the next message. Returns the message given up, if any."""
        record, self._current = self._current, None
        if record is not None:
            record.given_up = True
            self._move(Move.GIVE_UP)
        return record

    @property
    def in_flight(self) -> int:
        """Messages sent and not yet finished (completed or answered with an error)."""
        return sum(1 for r in self.records.values() if not r.done)

    @property
    def current(self) -> MessageRecord | None:
        return self._current

    # -- internals ------------------------------------------------------------------------------
    def _violate(
        self, rule: Rule, clause: str, description: str, at: float, severity: Severity = Severity.ERROR
    ) -> ProtocolViolation:
        v = ProtocolViolation(clause, description, severity, at, rule)
        self.violations.append(v)
        return v

    def _take_pending(self, request_id: Any) -> MessageRecord | None:
        if isinstance(request_id, str) and request_id in self._pending:
            self._pending.remove(request_id)
            return self.records[request_id]
        if self._pending:
            return self.records[self._pending.popleft()]
        return None

    def _on_start(self, control: dict[str, Any], at: float) -> list[SessionEvent]:
        events: list[SessionEvent] = []
        if self._current is not None:
            events.append(
                self._violate(
                    Rule.START_OVERLAP,
                    "TTS-ORDER",
                    f"synthesis_start for {control.get('request_id')!r} before "
                    f"synthesis_complete of {self._current.request_id!r}",
                    at,
                )
            )
            self._current.given_up = True  # the next message has begun: this one will not complete
        record = self._take_pending(control.get("request_id"))
        rate = control.get("sample_rate")
        if not isinstance(rate, int) or isinstance(rate, bool) or rate <= 0:
            events.append(
                self._violate(
                    Rule.START_SAMPLE_RATE, "TTS-AUDIO", f"synthesis_start without a valid sample_rate: {rate!r}", at
                )
            )
            rate = record.sample_rate if record else DEFAULT_SAMPLE_RATE
        if record is None:
            events.append(
                self._violate(Rule.START_UNSOLICITED, "TTS-ORDER", "synthesis_start with no message pending", at)
            )
        else:
            if control.get("request_id") != record.request_id:
                events.append(
                    self._violate(
                        Rule.START_REQUEST_ID,
                        "TTS-ORDER",
                        f"synthesis_start request_id {control.get('request_id')!r} does not echo {record.request_id!r}",
                        at,
                        Severity.WARNING,
                    )
                )
            record.started_at = at
            record.sample_rate = rate
        self._current = record
        self._move(Move.START)
        events.append(SynthesisStarted(control.get("request_id"), rate, control, at))
        return events

    def _on_audio(self, pcm: bytes, at: float) -> list[SessionEvent]:
        events: list[SessionEvent] = []
        record = self._current
        if record is None:
            events.append(
                self._violate(
                    Rule.AUDIO_OUTSIDE,
                    "TTS-ORDER",
                    f"{len(pcm)} bytes of audio outside synthesis_start/synthesis_complete",
                    at,
                )
            )
        else:
            if record.first_audio_at is None:
                record.first_audio_at = at
            if record.first_audible_byte is None and not record.audio_bytes % SAMPLE_WIDTH_BYTES:
                sample = first_audible_sample(pcm)
                if sample is not None:
                    record.first_audible_byte = record.audio_bytes + sample * SAMPLE_WIDTH_BYTES
            record.audio_bytes += len(pcm)
            record.frame_times.append(at)
            record.frame_sizes.append(len(pcm))
            seen = len(record.wraps.wraps)
            if (wraps := record.wraps.feed(pcm)) and not seen:  # said once a message; all are counted
                events.append(
                    self._violate(Rule.AUDIO_WRAPPED, "TTS-AUDIO", wraps[0].describe(record.sample_rate), at)
                )
        if len(pcm) % SAMPLE_WIDTH_BYTES:
            events.append(
                self._violate(
                    Rule.AUDIO_ODD_LENGTH,
                    "TTS-AUDIO",
                    f"audio frame of {len(pcm)} bytes is not a whole number of 16-bit samples",
                    at,
                )
            )
        elif not pcm:
            events.append(self._violate(Rule.AUDIO_EMPTY, "TTS-AUDIO", "empty audio frame", at, Severity.WARNING))
        events.append(AudioReceived(record.request_id if record else None, pcm, at))
        return events

    def _on_complete(self, control: dict[str, Any], at: float) -> list[SessionEvent]:
        events: list[SessionEvent] = []
        record = self._current
        if record is None:
            events.append(
                self._violate(Rule.COMPLETE_UNSTARTED, "TTS-ORDER", "synthesis_complete without synthesis_start", at)
            )
            record = self._take_pending(control.get("request_id"))
        reported = control.get("audio_bytes")
        received = record.audio_bytes if record else 0
        cancelled = control.get("cancelled") is True
        if isinstance(reported, int) and not isinstance(reported, bool):
            if reported != received:
                events.append(
                    self._violate(
                        Rule.COMPLETE_BYTES,
                        "TTS-ORDER",
                        f"synthesis_complete reports {reported} audio bytes, {received} arrived",
                        at,
                    )
                )
        else:
            events.append(
                self._violate(
                    Rule.COMPLETE_BYTES_MISSING,
                    "TTS-ORDER",
                    "synthesis_complete without an integer audio_bytes",
                    at,
                    Severity.WARNING,
                )
            )
            reported = None
        if record is not None:
            if record.first_audio_at is None and not cancelled:
                events.append(
                    self._violate(
                        Rule.COMPLETE_NO_AUDIO, "TTS-ORDER", "synthesis_complete with no audio frame before it", at
                    )
                )
            record.completed_at = at
            record.cancelled = cancelled
        duration = control.get("duration_s")
        self._current = None
        self._move(Move.END)
        events.append(
            SynthesisCompleted(
                control.get("request_id"),
                reported,
                received,
                float(duration) if isinstance(duration, (int, float)) else None,
                cancelled,
                control,
                at,
            )
        )
        return events

    def _on_error(self, control: dict[str, Any], at: float) -> list[SessionEvent]:
        events: list[SessionEvent] = []
        code, message = control.get("code"), control.get("message")
        if not isinstance(code, str) or not code:
            events.append(
                self._violate(Rule.ERROR_NO_CODE, "TTS-ERROR", f"error frame without a code: {control!r}", at)
            )
        if not isinstance(message, str) or not message.strip():
            events.append(
                self._violate(
                    Rule.ERROR_NO_MESSAGE, "TTS-ERROR", "error frame without a human message", at, Severity.WARNING
                )
            )
        record = self._current
        if record is not None:  # an error mid-synthesis ends the current message
            if code != "internal":  # only a failure can interrupt a started message; input was checked
                events.append(
                    self._violate(
                        Rule.ERROR_AFTER_START,
                        "TTS-ORDER",
                        f"error {code!r} after synthesis_start of {record.request_id!r}: input "
                        "errors belong before synthesis_start",
                        at,
                        Severity.WARNING,
                    )
                )
            self._current = None
            self._move(Move.END)
        else:
            record = self._take_pending(control.get("request_id"))
        if record is not None:
            record.error_code = code if isinstance(code, str) else "?"
            record.completed_at = None
        events.append(
            ErrorReceived(
                control.get("request_id"),
                code if isinstance(code, str) else None,
                message if isinstance(message, str) else None,
                control,
                at,
            )
        )
        return events


_AUDIO_FIELDS = ("audio", "data", "pcm", "chunk", "audio_b64")  # audio_b64: vLLM-Omni's audio.chunk


def _audio_in_json(control: dict[str, Any]) -> bytes | None:
    """The PCM of a control frame that carries base64 audio in a well-known field, else None."""
    for name in _AUDIO_FIELDS:
        value = control.get(name)
        if isinstance(value, str) and len(value) >= 4:
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                return None
    return None
