"""Direct WebSocket transport to a container (no SageMaker in between)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bidi_tts.frames import Frame, FrameKind
from bidi_tts.transports._ws_common import (
    CloseState,
    connect_errors,
    connect_options,
    resolve_url,
    transport_closed,
    websocket_url,
)
from bidi_tts.transports.base import AsyncWaitClosed, TransportTimeout

__all__ = ["WebSocketTransport", "transport_closed", "websocket_url"]


class WebSocketTransport(CloseState, AsyncWaitClosed):
    """A :class:`~bidi_tts.transports.base.Transport` over one WebSocket connection."""

    knows_frame_kind = True

    def __init__(self, connection: ClientConnection) -> None:
        self._ws = connection

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
        ws_url = resolve_url(url)
        with connect_errors(ws_url):
            connection = await connect(ws_url, ping_interval=ping_interval, close_timeout=close_timeout,
                                       **connect_options(headers, open_timeout))
        return cls(connection)

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
        self._closed_by_us(self._ws)
