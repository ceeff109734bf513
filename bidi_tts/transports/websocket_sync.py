"""Blocking WebSocket transport on ``websockets.sync.client``.

For callers without an asyncio loop: Locust users (gevent patches the threads and sockets the sync
client uses, so it cooperates with the gevent hub) and plain scripts. Frames are stamped with
``time.perf_counter()`` when the connection's reader thread parses their last fragment, not
when the caller gets round to ``recv``: under load the caller's wake-up can lag behind.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Mapping
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode
from websockets.sync.client import ClientConnection, connect

from bidi_tts.frames import FrameKind
from bidi_tts.transports.base import ConnectError, Frame, TransportClosed, TransportTimeout
from bidi_tts.transports.websocket import transport_closed, websocket_url

_DATA = (Opcode.TEXT, Opcode.BINARY, Opcode.CONT)


class _StampingConnection(ClientConnection):
    """Notes the arrival time of every complete data message, in the reader thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.arrivals: collections.deque[float] = collections.deque()  # before the reader starts
        super().__init__(*args, **kwargs)

    def process_event(self, event: Any) -> None:
        if self.response is not None and isinstance(event, WsFrame) and event.opcode in _DATA and event.fin:
            self.arrivals.append(time.perf_counter())
        super().process_event(event)


class SyncWebSocketTransport:
    """The blocking twin of :class:`bidi_tts.transports.websocket.WebSocketTransport`."""

    knows_frame_kind = True

    def __init__(self, connection: ClientConnection) -> None:
        self._ws = connection
        self._closed: TransportClosed | None = None

    @classmethod
    def open(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        open_timeout: float = 10.0,
    ) -> SyncWebSocketTransport:
        """Connect to `url` (an http(s):// container base URL or a full ws(s):// URL)."""
        ws_url = url if url.startswith(("ws://", "wss://")) else websocket_url(url)
        try:
            connection = connect(
                ws_url,
                additional_headers=dict(headers or {}),
                open_timeout=open_timeout,
                max_size=None,
                compression=None,
                create_connection=_StampingConnection,
                legacy=True,  # return the connection itself; this object owns and closes it
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            raise ConnectError(f"{ws_url}: handshake rejected with HTTP {status}", status=status) from exc
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise ConnectError(f"{ws_url}: cannot connect ({type(exc).__name__})") from exc
        return cls(connection)

    @property
    def close_code(self) -> int | None:
        return self._closed.code if self._closed else None

    def _closed_error(self, exc: ConnectionClosed) -> TransportClosed:
        if self._closed is None:
            self._closed = transport_closed(exc)
        return self._closed

    def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> float:
        """Send one message as one frame; returns the perf_counter() taken just before the write."""
        text = None if kind is None else kind is FrameKind.TEXT
        at = time.perf_counter()
        try:
            self._ws.send(payload, text=text)
        except ConnectionClosed as exc:
            raise self._closed_error(exc) from None
        return at

    def receive(self, timeout: float | None = None) -> Frame:
        """The next frame; TransportTimeout after `timeout` seconds (0: only what already arrived)."""
        if self._closed is not None:
            raise self._closed
        try:
            message = self._ws.recv(timeout=timeout)
        except TimeoutError:
            raise TransportTimeout(f"no frame within {timeout} s") from None
        except ConnectionClosed as exc:
            raise self._closed_error(exc) from None
        arrivals = getattr(self._ws, "arrivals", None)
        now = arrivals.popleft() if arrivals else time.perf_counter()
        if isinstance(message, str):
            return Frame(message.encode("utf-8"), FrameKind.TEXT, now)
        return Frame(bytes(message), FrameKind.BINARY, now)

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Close from the client side (idempotent)."""
        self._ws.close(code, reason)
        if self._closed is None:
            self._closed = TransportClosed(self._ws.close_code, self._ws.close_reason or "", by_peer=False)

    def wait_closed(self, timeout: float) -> TransportClosed:
        """Drain frames until the peer closes, or TransportTimeout after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TransportTimeout(f"not closed within {timeout} s")
            try:
                self.receive(timeout=left)
            except TransportClosed as closed:
                return closed
