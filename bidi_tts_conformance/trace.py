"""The frames of one case, as Autobahn's case pages show them: what was sent and received, and when.

A :class:`FrameTrace` belongs to one case (see :class:`bidi_tts_conformance.context.CaseContext`).
Every session a case opens is wrapped in a :class:`TracingTransport` and every HTTP request of the
case goes through :func:`http_hooks`, so each frame is recorded at the transport seam with its
direction, the time since the case began, its kind (text, binary, close, connect, HTTP, timeout), its
size and a short preview. The trace is bounded: at most :data:`MAX_EVENTS` rows are kept per case
(later ones are only counted), a text preview holds at most :data:`TEXT_PREVIEW` characters and a
binary one the first :data:`HEX_PREVIEW` bytes in hex, so a case costs at most a few hundred
kilobytes however many audio frames it receives, and recording a frame costs a few microseconds.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bidi_tts.frames import FrameKind
from bidi_tts.transports.base import AsyncWaitClosed, Frame, Transport, TransportClosed, TransportTimeout
from bidi_tts_conformance.session_audio import SessionAudio

MAX_EVENTS = 500  # rows kept per case; later events are counted only
TEXT_PREVIEW = 300  # characters of a text frame shown
HEX_PREVIEW = 16  # bytes of a binary frame shown in hex

SENT, RECEIVED, EVENT = "sent", "received", "-"


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One row of a case page."""

    t_ms: float  # since the case began
    session: str  # "s1", "s2"... for WebSocket/SageMaker sessions, "http" for HTTP requests
    direction: str  # SENT, RECEIVED or EVENT
    kind: str  # text, binary, frame (kind unknown), close, connect, HTTP, timeout
    size: int | None  # bytes of payload, when it has one
    preview: str  # plain text (the page escapes it)


class FrameTrace:
    """The bounded record of one case's frames."""

    def __init__(self, limit: int = MAX_EVENTS, started: float | None = None) -> None:
        self.limit = limit
        self.started = time.perf_counter() if started is None else started
        self.events: list[TraceEvent] = []
        self.not_recorded = 0  # events past the limit
        self.sent = 0  # frames sent (every one, recorded or not)
        self.received = 0
        self._sessions = 0
        self.audio = SessionAudio()  # the PCM each session received, for the case page's player

    def new_session(self) -> str:
        self._sessions += 1
        return f"s{self._sessions}"

    def add(self, session: str, direction: str, kind: str, size: int | None, preview: str,
            at: float | None = None) -> None:
        if direction == SENT:
            self.sent += 1
        elif direction == RECEIVED:
            self.received += 1
        if len(self.events) >= self.limit:
            self.not_recorded += 1
            return
        now = time.perf_counter() if at is None else at
        self.events.append(TraceEvent(round((now - self.started) * 1000, 1), session, direction, kind, size,
                                      preview))

    def frame(self, session: str, direction: str, payload: bytes | str, kind: FrameKind | None,
              at: float | None = None, note: str = "") -> None:
        """A data frame: its kind, size and preview (computed only while rows are still kept)."""
        if len(self.events) >= self.limit:
            self.add(session, direction, "", None, "")
            return
        data = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload
        if kind is None and isinstance(payload, str):
            kind = FrameKind.TEXT
        name = kind.value if kind is not None else "frame"
        text = preview_text(data) if kind is FrameKind.TEXT else preview_binary(data)
        self.add(session, direction, name, len(data), f"{note}{text}", at)

    def summary(self) -> dict[str, int]:
        """Counts for the JSON report (the rows themselves go to the case page)."""
        return {"sent": self.sent, "received": self.received, "recorded": len(self.events),
                "not_recorded": self.not_recorded}


def _visible(text: str) -> str:
    """Control characters shown as escapes, so that a preview is one readable line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def preview_text(data: bytes) -> str:
    """The start of a text frame: up to TEXT_PREVIEW characters, invalid UTF-8 shown as U+FFFD."""
    text = data[: TEXT_PREVIEW * 4].decode("utf-8", "replace")
    more = len(text) > TEXT_PREVIEW or len(data) > TEXT_PREVIEW * 4
    return _visible(text[:TEXT_PREVIEW]) + (" …" if more else "")


def preview_binary(data: bytes) -> str:
    """The first bytes in hex; when they read as UTF-8 text (a JSON message in a BINARY frame), the
    text too."""
    shown = data[:HEX_PREVIEW].hex(" ") + (" …" if len(data) > HEX_PREVIEW else "")
    if data[:1] in (b"{", b"[", b'"'):
        try:
            text = codecs.getincrementaldecoder("utf-8")().decode(data[: TEXT_PREVIEW * 4], final=False)
        except UnicodeDecodeError:
            return shown
        if text.isprintable():
            more = len(text) > TEXT_PREVIEW or len(data) > TEXT_PREVIEW * 4
            return f"{shown} | as text: {text[:TEXT_PREVIEW]}{' …' if more else ''}"
    return shown


def describe_closed(closed: TransportClosed) -> str:
    reason = f" reason {closed.reason!r}" if closed.reason else ""
    return f"code {closed.code}{reason}" if closed.code is not None else f"no close code{reason}"


class TracingTransport(AsyncWaitClosed):
    """A Transport that records every frame into a FrameTrace and otherwise does what `inner` does."""

    def __init__(self, inner: Transport, trace: FrameTrace, session: str) -> None:
        self.inner = inner
        self.trace = trace
        self.session = session
        self.knows_frame_kind = inner.knows_frame_kind
        self._close_seen = False

    def __getattr__(self, name: str) -> Any:  # anything else a case may use on its transport
        return getattr(self.inner, name)

    @property
    def close_code(self) -> int | None:
        return self.inner.close_code

    async def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> None:
        shown = kind if kind is not None else FrameKind.TEXT if isinstance(payload, str) else FrameKind.BINARY
        self.trace.frame(self.session, SENT, payload, shown)
        await self._guard(self.inner.send(payload, kind=kind))  # kind None stays None (no DataType)

    async def send_fragmented(self, fragments: Sequence[bytes], *, kind: FrameKind) -> None:
        n = len(fragments)
        for i, fragment in enumerate(fragments, 1):
            # A fragment of a TEXT message may end inside a UTF-8 sequence: show it as replaced.
            self.trace.frame(self.session, SENT, bytes(fragment), kind, note=f"fragment {i}/{n}: ")
        await self._guard(self.inner.send_fragmented(fragments, kind=kind))

    async def receive(self, timeout: float | None = None) -> Frame:
        try:
            frame = await self.inner.receive(timeout)
        except TransportTimeout:
            self.trace.add(self.session, EVENT, "timeout", None, f"nothing arrived for {timeout} s")
            raise
        except TransportClosed as closed:
            self._closed(closed)
            raise
        self.trace.frame(self.session, RECEIVED, frame.payload, frame.kind, at=frame.received_at)
        self.trace.audio.received(self.session, frame.payload, frame.kind,
                                  (frame.received_at - self.trace.started) * 1000)
        return frame

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if not self._close_seen:
            self._close_seen = True
            self.trace.add(self.session, SENT, "close", None, f"client close, code {code}"
                           + (f" reason {reason!r}" if reason else ""))
        await self.inner.close(code, reason)

    async def _guard(self, sending: Awaitable[None]) -> None:
        try:
            await sending
        except TransportClosed as closed:
            self._closed(closed)
            raise

    def _closed(self, closed: TransportClosed) -> None:
        if self._close_seen:
            return
        self._close_seen = True
        who = "closed by the container" if closed.by_peer else "closed"
        self.trace.add(self.session, RECEIVED if closed.by_peer else EVENT, "close", None,
                       f"{who}: {describe_closed(closed)}")


def http_hooks(trace: FrameTrace) -> dict[str, list[Callable[[Any], Awaitable[None]]]]:
    """httpx event hooks that record each request and the head of each response."""

    async def on_request(request: Any) -> None:
        size = request.headers.get("content-length")
        trace.add("http", SENT, "HTTP", int(size) if size and size.isdigit() else None,
                  f"{request.method} {request.url.raw_path.decode('ascii', 'replace')}")

    async def on_response(response: Any) -> None:
        size = response.headers.get("content-length")
        ctype = response.headers.get("content-type", "")
        trace.add("http", RECEIVED, "HTTP", int(size) if size and size.isdigit() else None,
                  f"{response.status_code} {response.reason_phrase}" + (f" ({ctype})" if ctype else "")
                  + f" for {response.request.method} {response.request.url.path}")

    return {"request": [on_request], "response": [on_response]}
