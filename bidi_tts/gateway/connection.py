"""One TLS + HTTP/2 client connection of the stand-in: h2's state machine over asyncio streams.

The connection owns the h2 state and the socket; each request stream is handed to a
:class:`~bidi_tts.gateway.bridge.StreamBridge`, which calls back here to write. Everything runs on
one event loop, so h2 calls between two awaits never interleave.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

logger = logging.getLogger("bidi_tts.gateway")


class StreamGone(Exception):
    """The HTTP/2 stream (or the whole connection) is closed; nothing more can be written."""


class StreamHandler(Protocol):
    """What the connection needs from a per-stream handler."""

    def feed(self, data: bytes) -> None: ...
    def end_input(self) -> None: ...
    def abort(self) -> None: ...


HandlerFactory = Callable[["H2ServerConnection", int, dict[str, str]], StreamHandler]


class H2ServerConnection:
    """Serves one accepted connection until the peer goes away."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler_factory: HandlerFactory,
        prefix: bytes = b"",
    ) -> None:
        self._prefix = prefix  # bytes already read to tell HTTP/2 from HTTP/1.1
        self._reader = reader
        self._writer = writer
        self._factory = handler_factory
        self._h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        )
        self._handlers: dict[int, StreamHandler] = {}
        self._window_changed = asyncio.Event()
        self._closed = False

    async def serve(self) -> None:
        self._h2.initiate_connection()
        self._flush()
        try:
            while not self._closed:
                data, self._prefix = self._prefix or await self._reader.read(65536), b""
                if not data:
                    break
                try:
                    events = self._h2.receive_data(data)
                except h2.exceptions.ProtocolError as exc:
                    logger.warning("HTTP/2 protocol error from client: %s", type(exc).__name__)
                    self._flush()
                    break
                for event in events:
                    self._dispatch(event)
                self._flush()
                await self._writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            self._closed = True
            self._window_changed.set()
            for handler in list(self._handlers.values()):
                handler.abort()
            self._handlers.clear()
            self._writer.close()

    def _dispatch(self, event: h2.events.Event) -> None:
        match event:
            case h2.events.RequestReceived(stream_id=sid, headers=headers):
                fields = {str(k).lower(): str(v) for k, v in headers or []}
                self._handlers[sid] = self._factory(self, sid, fields)
            case h2.events.DataReceived(stream_id=sid, data=data, flow_controlled_length=length):
                # Credit the window at once: the bridge queues without bound, like a proxy buffer.
                self._h2.acknowledge_received_data(length, sid)
                if (handler := self._handlers.get(sid)) is not None:
                    handler.feed(data)
            case h2.events.StreamEnded(stream_id=sid):
                if (handler := self._handlers.get(sid)) is not None:
                    handler.end_input()
            case h2.events.StreamReset(stream_id=sid):
                if (handler := self._handlers.pop(sid, None)) is not None:
                    handler.abort()
            case h2.events.WindowUpdated() | h2.events.RemoteSettingsChanged():
                self._window_changed.set()
            case h2.events.ConnectionTerminated():
                self._closed = True

    def _flush(self) -> None:
        data = self._h2.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)

    def forget(self, stream_id: int) -> None:
        """The handler of `stream_id` is finished."""
        self._handlers.pop(stream_id, None)

    # -- writes used by stream handlers --------------------------------------------------------
    def send_headers(
        self, stream_id: int, headers: list[tuple[str, str]], *, end_stream: bool = False
    ) -> None:
        self._guard(lambda: self._h2.send_headers(stream_id, headers, end_stream=end_stream))

    async def send_data(self, stream_id: int, data: bytes, *, end_stream: bool = False) -> None:
        """Write `data`, waiting for flow-control credit as needed."""
        view = memoryview(data)
        while view:
            if self._closed:
                raise StreamGone()
            try:
                window = min(self._h2.local_flow_control_window(stream_id), self._h2.max_outbound_frame_size)
            except h2.exceptions.StreamClosedError:
                raise StreamGone() from None
            if window <= 0:
                self._window_changed.clear()
                await self._window_changed.wait()
                continue
            chunk, view = bytes(view[:window]), view[window:]
            last = end_stream and not view
            self._guard(lambda: self._h2.send_data(stream_id, chunk, end_stream=last))  # noqa: B023
            await self._drain()
        if end_stream and not data:
            self.end_stream(stream_id)

    def end_stream(self, stream_id: int) -> None:
        self._guard(lambda: self._h2.end_stream(stream_id))

    def reset_stream(
        self, stream_id: int, code: h2.errors.ErrorCodes = h2.errors.ErrorCodes.INTERNAL_ERROR
    ) -> None:
        try:
            self._guard(lambda: self._h2.reset_stream(stream_id, code))
        except StreamGone:
            pass

    async def _drain(self) -> None:
        try:
            await self._writer.drain()
        except (ConnectionError, OSError):
            self._closed = True
            raise StreamGone() from None

    def _guard(self, action: Callable[[], object]) -> None:
        if self._closed:
            raise StreamGone()
        try:
            action()
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError) as exc:
            raise StreamGone() from exc
        self._flush()
