"""``POST /invocations`` to the container, as the stand-in's request routes forward it: one
connection per request (``Connection: close``), the answer's body read piece by piece as the
container streams it."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from bidi_tts.gateway.http1 import Head, HttpError, body_chunks, encode_head, read_head


@dataclass
class ContainerAnswer:
    """The container's status and headers; :meth:`chunks` streams the body."""

    status: int
    head: Head
    _reader: asyncio.StreamReader

    def chunks(self) -> AsyncIterator[bytes]:
        """Raises :class:`~bidi_tts.gateway.http1.HttpError` when the body breaks off."""
        return body_chunks(self._reader, self.head, until_close=True)


@contextlib.asynccontextmanager
async def post_invocations(upstream: str, body: bytes, headers: list[tuple[str, str]],
                           head_timeout_s: float) -> AsyncIterator[ContainerAnswer]:
    """Send the request; yield once the container's status line and headers are in.

    Raises OSError when the container cannot be reached, TimeoutError when it does not answer
    within `head_timeout_s`, :class:`~bidi_tts.gateway.http1.HttpError` for a garbled answer."""
    parts = urlsplit(upstream)
    tls = ssl.create_default_context() if parts.scheme == "https" else None
    port = parts.port or (443 if tls else 80)
    host = parts.hostname or "127.0.0.1"
    async with asyncio.timeout(head_timeout_s):
        reader, writer = await asyncio.open_connection(host, port, ssl=tls)
    try:
        request = [("Host", parts.netloc), *headers, ("Content-Length", str(len(body))),
                   ("Connection", "close")]
        writer.write(encode_head(f"POST {parts.path.rstrip('/')}/invocations HTTP/1.1", request) + body)
        async with asyncio.timeout(head_timeout_s):
            await writer.drain()
            head = await read_head(reader)
        if head is None or len(head.start) < 2 or not head.start[1].isdigit():
            raise HttpError("the container closed the connection without an answer")
        yield ContainerAnswer(int(head.start[1]), head, reader)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 2.0)
