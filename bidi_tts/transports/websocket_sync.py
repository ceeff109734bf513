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

from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode
from websockets.sync.client import ClientConnection, connect

from bidi_tts.frames import Frame, FrameKind
from bidi_tts.transports._ws_common import CloseState, connect_errors, connect_options, resolve_url
from bidi_tts.transports.base import SyncWaitClosed, TransportTimeout

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


class SyncWebSocketTransport(CloseState, SyncWaitClosed):
    """The blocking twin of :class:`bidi_tts.transports.websocket.WebSocketTransport`."""

    knows_frame_kind = True

    def __init__(self, connection: ClientConnection) -> None:
        self._ws = connection

    @classmethod
    def open(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        open_timeout: float = 10.0,
    ) -> SyncWebSocketTransport:
        """Connect to `url` (an http(s):// container base URL or a full ws(s):// URL)."""
        ws_url = resolve_url(url)
        with connect_errors(ws_url):
            connection = connect(
                ws_url,
                create_connection=_StampingConnection,
                legacy=True,  # return the connection itself; this object owns and closes it
                **connect_options(headers, open_timeout),
            )
        return cls(connection)

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
        self._closed_by_us(self._ws)
