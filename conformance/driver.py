"""A conversation: one Transport plus one ClientSession, with waits that turn into case failures.

Every frame goes through :class:`bidi_tts.session.ClientSession`, so every case checks the
ordering invariants (TTS-ORDER, TTS-AUDIO, TTS-CLASSIFY) for free.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bidi_tts.frames import FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import (
    AudioReceived,
    ClientSession,
    ErrorReceived,
    MessageRecord,
    ProtocolViolation,
    SessionEvent,
    Severity,
    SynthesisCompleted,
    SynthesisStarted,
)
from bidi_tts.transports.base import Transport, TransportClosed, TransportTimeout
from conformance.model import CaseFailed


@dataclass(slots=True)
class Reply:
    """Everything that answered one synthesize message."""

    request_id: str
    record: MessageRecord
    started: SynthesisStarted | None = None
    completed: SynthesisCompleted | None = None
    error: ErrorReceived | None = None
    audio: bytearray = field(default_factory=bytearray)
    frame_kinds: list[str] = field(default_factory=list)  # "text"/"binary"/"?" per frame in order


def describe_frame(payload: bytes, kind: FrameKind | None) -> str:
    """A short human description of a frame for failure details."""
    label = kind.value.upper() if kind else "FRAME"
    try:
        obj = json.loads(payload.decode("utf-8"))
        if isinstance(obj, dict):
            shown = {k: obj[k] for k in list(obj)[:5]}
            text = json.dumps(shown, ensure_ascii=False)
            return f"{label} {text[:160]}"
    except (UnicodeDecodeError, ValueError):
        pass
    return f"{label} {len(payload)} bytes"


class Conversation:
    """Drives one session: send messages, collect replies, fail with the real cause."""

    def __init__(self, transport: Transport, *, reply_timeout: float, voice: str, sample_rate: int) -> None:
        self.transport = transport
        self.session = ClientSession()
        self.reply_timeout = reply_timeout
        self.voice = voice
        self.sample_rate = sample_rate
        self.log: list[str] = []  # human description of every frame received, in order
        self.events: list[SessionEvent] = []
        self.replies: dict[str, Reply] = {}
        self.closed: TransportClosed | None = None
        self.closed_at: float | None = None
        self._errors_without_request: list[ErrorReceived] = []

    # -- sending -------------------------------------------------------------------------------
    def request(self, text: str, **fields: Any) -> SynthesizeRequest:
        values: dict[str, Any] = {"voice": self.voice, "sample_rate": self.sample_rate}
        values.update(fields)
        return SynthesizeRequest(text=text, **values)

    async def synthesize(
        self,
        text: str,
        *,
        kind: FrameKind | None = FrameKind.TEXT,
        payload: dict[str, Any] | None = None,
        fragments: int | None = None,
        split_at: Sequence[int] | None = None,
        **fields: Any,
    ) -> str:
        """Send one synthesize message; returns its request_id.

        `payload` replaces the JSON body (its request_id, if any, is used for tracking);
        `fragments`/`split_at` send it as a fragmented message split at those byte offsets.
        """
        if payload is not None:
            rid = str(payload.get("request_id") or uuid.uuid4().hex)
            body = json.dumps(payload, ensure_ascii=False)
            self.session.synthesize(self.request(text, request_id=rid, **fields))
        else:
            req = self.request(text, **fields)
            rid = req.request_id
            body = self.session.synthesize(req)
        self.replies[rid] = Reply(rid, self.session.records[rid])
        data = body.encode("utf-8")
        if split_at is not None or fragments is not None:
            cuts = sorted(split_at) if split_at is not None else _even_cuts(len(data), fragments or 2)
            parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
            await self._send_fragmented(parts, kind or FrameKind.BINARY)
        else:
            await self.send_raw(data if kind is not FrameKind.TEXT else body, kind=kind)
        return rid

    def track(self, request_id: str | None = None, text: str = "(raw message)") -> str:
        """Expect an answer to a raw message about to be sent (so its frames are attributed)."""
        req = self.request(text, request_id=request_id or uuid.uuid4().hex)
        self.session.synthesize(req)
        self.replies[req.request_id] = Reply(req.request_id, self.session.records[req.request_id])
        return req.request_id

    async def send_raw(self, payload: bytes | str, *, kind: FrameKind | None = FrameKind.TEXT) -> None:
        """Send bytes exactly as given (bad inputs, close, cancel)."""
        try:
            await self.transport.send(payload, kind=kind)
        except TransportClosed as closed:
            self._on_closed(closed)
            raise CaseFailed(f"the container had closed the session before the message was sent "
                             f"(close code {closed.code}, reason {closed.reason!r})") from None

    async def send_json(self, obj: Any, *, kind: FrameKind | None = FrameKind.TEXT) -> None:
        await self.send_raw(json.dumps(obj), kind=kind)

    async def _send_fragmented(self, parts: list[bytes], kind: FrameKind) -> None:
        try:
            await self.transport.send_fragmented(parts, kind=kind)
        except TransportClosed as closed:
            self._on_closed(closed)
            raise CaseFailed(f"the container had closed the session before the message was sent "
                             f"(close code {closed.code})") from None

    async def close_request(self, kind: FrameKind | None = FrameKind.TEXT) -> None:
        await self.send_raw(self.session.close(), kind=kind)

    # -- receiving -----------------------------------------------------------------------------
    async def pump(self, timeout: float | None = None) -> list[SessionEvent]:
        """Receive one frame and feed it to the session. Raises TransportClosed/TransportTimeout."""
        if self.closed is not None:
            raise self.closed
        try:
            frame = await self.transport.receive(timeout=self.reply_timeout if timeout is None else timeout)
        except TransportClosed as closed:
            self._on_closed(closed)
            raise
        self.log.append(describe_frame(frame.payload, frame.kind))
        undone = [r for r in self.replies.values() if not r.record.done]
        events = self.session.receive_frame(frame)
        kind = frame.kind.value if frame.kind else "?"
        owner: Reply | None = None
        for event in events:
            self.events.append(event)
            if isinstance(event, AudioReceived):
                owner = self.replies.get(event.request_id or "")
                if owner is not None:
                    owner.audio.extend(event.pcm)
            elif isinstance(event, SynthesisStarted):
                current = self.session.current
                owner = self.replies.get(current.request_id) if current else None
                if owner is not None:
                    owner.started = event
            elif isinstance(event, SynthesisCompleted | ErrorReceived):
                owner = next((r for r in undone if r.record.done), None)
                if isinstance(event, SynthesisCompleted) and owner is not None:
                    owner.completed = event
                elif isinstance(event, ErrorReceived):
                    if owner is not None:
                        owner.error = event
                    else:
                        self._errors_without_request.append(event)
        if owner is not None:
            owner.frame_kinds.append(kind)
        return events

    def _on_closed(self, closed: TransportClosed) -> None:
        if self.closed is None:
            self.closed = closed
            self.closed_at = time.perf_counter()
            self.session.connection_closed(closed.code, closed.reason)

    def _status(self) -> str:
        shown = self.log[-6:]
        more = f"{len(self.log) - len(shown)} earlier frames, then " if len(self.log) > len(shown) else ""
        return f"{more}{'; '.join(shown)}" if shown else "no frame at all"

    async def wait_reply(self, rid: str, timeout: float | None = None) -> Reply:
        """Wait until the message is completed or answered with an error."""
        reply = self.replies[rid]
        deadline = time.perf_counter() + (self.reply_timeout if timeout is None else timeout)
        while not reply.record.done:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise self._no_reply(reply, timeout)
            try:
                await self.pump(left)
            except TransportTimeout:
                raise self._no_reply(reply, timeout) from None
            except TransportClosed as closed:
                raise CaseFailed(
                    f"the container closed the session (code {closed.code}, reason {closed.reason!r}) "
                    f"before finishing the message; received: {self._status()}",
                    expected="synthesis_start, audio, synthesis_complete; the session stays open",
                    actual=f"close {closed.code}",
                ) from None
        return reply

    def _no_reply(self, reply: Reply, timeout: float | None) -> CaseFailed:
        t = self.reply_timeout if timeout is None else timeout
        if reply.started is None:
            what = "no synthesis_start"
        elif not reply.audio:
            what = "synthesis_start but no audio"
        else:
            what = f"synthesis_start and {len(reply.audio)} audio bytes but no synthesis_complete"
        return CaseFailed(f"{what} within {t:.1f} s; received: {self._status()}",
                          expected="synthesis_start, audio, synthesis_complete", actual=what)

    async def complete(self, rid: str, timeout: float | None = None) -> Reply:
        """Wait for the reply and require success: synthesis_complete, no ERROR violation."""
        reply = await self.wait_reply(rid, timeout)
        if reply.error is not None:
            raise CaseFailed(
                f"a valid message was refused with error code {reply.error.code!r} "
                f"({reply.error.message!r})",
                expected="synthesis_start, audio, synthesis_complete", actual=f"error {reply.error.code}")
        self.raise_violations()
        return reply

    async def say(self, text: str, **kw: Any) -> Reply:
        """Send one message and wait for its successful completion."""
        timeout = kw.pop("timeout", None)
        return await self.complete(await self.synthesize(text, **kw), timeout)

    async def expect_error(self, timeout: float | None = None) -> ErrorReceived | TransportClosed:
        """Wait for the next error frame (nothing pending) or the end of the session."""
        start = len(self._errors_without_request)
        deadline = time.perf_counter() + (self.reply_timeout if timeout is None else timeout)
        while len(self._errors_without_request) == start:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            try:
                await self.pump(left)
            except TransportTimeout:
                break
            except TransportClosed as closed:
                return closed
        if len(self._errors_without_request) > start:
            return self._errors_without_request[start]
        t = self.reply_timeout if timeout is None else timeout
        raise CaseFailed(f"no error frame and no close within {t:.1f} s; received: {self._status()}",
                         expected="an error frame with a code", actual="silence")

    async def wait_closed(self, timeout: float | None = None) -> TransportClosed:
        """Read (and check) frames until the container closes the session."""
        deadline = time.perf_counter() + (self.reply_timeout if timeout is None else timeout)
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            try:
                await self.pump(left)
            except TransportTimeout:
                break
            except TransportClosed as closed:
                return closed
        t = self.reply_timeout if timeout is None else timeout
        raise CaseFailed(f"the container did not close the session within {t:.1f} s; received: "
                         f"{self._status()}", expected="a close frame", actual="the session stayed open")

    async def quiet(self, seconds: float) -> list[str]:
        """Frames that arrive within `seconds` (expected: none)."""
        seen = len(self.log)
        deadline = time.perf_counter() + seconds
        while (left := deadline - time.perf_counter()) > 0:
            try:
                await self.pump(left)
            except (TransportTimeout, TransportClosed):
                break
        return self.log[seen:]

    # -- invariants ----------------------------------------------------------------------------
    def violations(self, severity: Severity | None = Severity.ERROR) -> list[ProtocolViolation]:
        return [v for v in self.session.violations if severity is None or v.severity is severity]

    def raise_violations(self) -> None:
        bad = self.violations()
        if bad:
            first = bad[0]
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise CaseFailed(f"{first.clause}: {first.description}{more}",
                             expected="frames in the order of CONTRACT.md", actual=first.description)

    def warnings(self) -> list[str]:
        return [f"{v.clause}: {v.description}" for v in self.violations(Severity.WARNING)]

    async def close(self) -> None:
        try:
            await self.transport.close()
        except Exception:  # the peer may already be gone; closing is best effort
            pass


def _even_cuts(length: int, parts: int) -> list[int]:
    step = max(1, length // parts)
    return [i * step for i in range(1, parts) if i * step < length]
