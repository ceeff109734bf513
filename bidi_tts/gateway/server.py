"""The listening side of the stand-in: TLS on 127.0.0.1, one task per connection.

A connection that negotiates ``h2`` by ALPN (the HTTP/2 SDK) gets the bidirectional stream; one
that negotiates ``http/1.1`` (urllib3, so boto3) gets the InvokeEndpoint routes; one that
negotiates nothing is told apart by its first bytes (the HTTP/2 connection preface or not)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import threading
from pathlib import Path

from bidi_tts.gateway.bridge import FrameRecord, StreamBridge
from bidi_tts.gateway.config import GatewayConfig
from bidi_tts.gateway.connection import H2ServerConnection, StreamHandler
from bidi_tts.gateway.invoke import Http1Connection
from bidi_tts.gateway.tls import server_tls_context

logger = logging.getLogger("bidi_tts.gateway")

_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_FIRST_BYTES_TIMEOUT_S = 10.0


class ListenError(OSError):
    """The stand-in cannot listen on the address it was given (in use, not local, no permission)."""


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket for `host`:`port`, or :class:`ListenError` saying why not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = "the port is in use (pick another --port, or 0 for a free one)" \
            if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise ListenError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.setblocking(False)
    return sock


class Gateway:
    """A local SageMaker runtime edge in front of one container.

    ``async with Gateway(config) as gw:`` serves on ``gw.url``; clients trust ``gw.ca_file``.
    """

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        config.upstream_ws_base()  # fail fast on a bad --upstream
        self.frames_to_container: list[FrameRecord] = []  # every data frame sent to the container
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.ca_file: Path | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("gateway not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        host = self.config.host
        return f"https://{'[' + host + ']' if ':' in host else host}:{self.port}"

    async def start(self) -> None:
        """Listen; raises :class:`ListenError` (before writing ``ca.pem``) when the port is taken."""
        sock = listening_socket(self.config.host, self.config.port)
        try:
            context, self.ca_file = server_tls_context(self.config.cert_dir)
            self._server = await asyncio.start_server(self._accept, sock=sock, ssl=context)
        except BaseException:
            sock.close()
            raise

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self._writers.add(writer)
        try:
            ssl_object = writer.get_extra_info("ssl_object")
            alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
            prefix = b""
            if alpn is None:
                try:
                    async with asyncio.timeout(_FIRST_BYTES_TIMEOUT_S):
                        prefix = await reader.readexactly(len(_H2_PREFACE))
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError):
                    writer.close()
                    return
            if alpn == "h2" or prefix == _H2_PREFACE:
                await H2ServerConnection(reader, writer, self._new_stream, prefix).serve()
            else:
                await Http1Connection(self, reader, writer, prefix).serve()
        except asyncio.CancelledError:
            pass  # the gateway is closing; this task is the connection's outermost frame
        finally:
            self._connections.discard(task)
            self._writers.discard(writer)

    def _new_stream(self, conn: H2ServerConnection, stream_id: int, headers: dict[str, str]) -> StreamHandler:
        return StreamBridge(self, conn, stream_id, headers)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            for writer in list(self._writers):
                # Idle keep-alive clients (urllib3's pool) never answer a TLS close_notify: abort.
                writer.transport.abort()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
            self._server = None

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class GatewayThread:
    """Runs a :class:`Gateway` on its own event loop in a daemon thread (for tests and tools)."""

    def __init__(self, config: GatewayConfig) -> None:
        self.gateway = Gateway(config)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="gateway")

    @property
    def url(self) -> str:
        return self.gateway.url

    @property
    def ca_file(self) -> str:
        return str(self.gateway.ca_file)

    def __enter__(self) -> GatewayThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.gateway.start(), self._loop).result(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.gateway.close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
