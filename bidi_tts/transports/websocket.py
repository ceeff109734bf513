"""Direct WebSocket transport to a container (no SageMaker in between)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from bidi_tts.frames import FrameKind
from bidi_tts.protocol import WS_PATH
from bidi_tts.transports.base import ConnectError, Frame, TransportClosed, TransportTimeout


def websocket_url(container_url: str, path: str = WS_PATH) -> str:
    """Turn a container base URL (http://host:port) into its WebSocket URL."""
    parts = urlsplit(container_url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise ValueError(f"not an http(s) or ws(s) URL: {container_url!r}")
    base = parts.path.rstrip("/")
    if base.endswith(WS_PATH):
        base = base[: -len(WS_PATH)]
    return urlunsplit((scheme, parts.netloc, base + path, parts.query, ""))


def transport_closed(exc: ConnectionClosed) -> TransportClosed:
    """The transport's view of a websockets close: the code and reason received, and who began it."""
    rcvd = exc.rcvd
    by_peer = rcvd is not None and exc.rcvd_then_sent is not False
    return TransportClosed(rcvd.code if rcvd else None, rcvd.reason if rcvd else "", by_peer=by_peer)


class WebSocketTransport:
    """A :class:`~bidi_tts.transports.base.Transport` over one WebSocket connection."""

    knows_frame_kind = True

    def __init__(self, connection: ClientConnection) -> None:
        self._ws = connection
        self._closed: TransportClosed | None = None

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        open_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        close_timeout: float = 3.0,
    ) -> WebSocketTransport:
        """Connect to `url` (http(s):// base URL or a full ws(s):// URL).

        `close_timeout` bounds the closing handshake: a peer (or a network) that never answers the
        close frame costs at most that long before the connection is dropped.
        """
        ws_url = url if urlsplit(url).scheme in ("ws", "wss") else websocket_url(url)
        try:
            connection = await connect(
                ws_url,
                additional_headers=dict(headers or {}),
                open_timeout=open_timeout,
                ping_interval=ping_interval,
                close_timeout=close_timeout,
                max_size=None,
                compression=None,
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

    async def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> None:
        text = None if kind is None else kind is FrameKind.TEXT
        try:
            await self._ws.send(payload, text=text)
        except ConnectionClosed as exc:
            raise self._closed_error(exc) from None

    async def send_fragmented(self, fragments: Sequence[bytes], *, kind: FrameKind) -> None:
        # Fragments are raw bytes split anywhere, even inside a UTF-8 sequence: that is legal for
        # a fragmented TEXT message, whose UTF-8 is checked only once it is whole.
        try:
            await self._ws.send([bytes(f) for f in fragments], text=kind is FrameKind.TEXT)
        except ConnectionClosed as exc:
            raise self._closed_error(exc) from None

    async def receive(self, timeout: float | None = None) -> Frame:
        if self._closed is not None:
            raise self._closed
        try:
            async with asyncio.timeout(timeout):
                message = await self._ws.recv()
        except TimeoutError:
            raise TransportTimeout(f"no frame within {timeout} s") from None
        except ConnectionClosed as exc:
            raise self._closed_error(exc) from None
        now = time.perf_counter()
        if isinstance(message, str):
            return Frame(message.encode("utf-8"), FrameKind.TEXT, now)
        return Frame(bytes(message), FrameKind.BINARY, now)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        await self._ws.close(code, reason)
        if self._closed is None:
            self._closed = TransportClosed(self._ws.close_code, self._ws.close_reason or "", by_peer=False)

    async def wait_closed(self, timeout: float | None = None) -> TransportClosed:
        """Wait until the peer closes; frames arriving meanwhile are dropped."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    await self.receive()
        except TransportClosed as closed:
            return closed
        except TimeoutError:
            raise TransportTimeout(f"not closed within {timeout} s") from None
