"""Just enough HTTP/1.1 (RFC 9112) for the stand-in's request routes, both as server and as client:
a message head, a body by Content-Length, chunked coding or until the connection closes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

MAX_HEAD_BYTES = 64 * 1024
_READ_BYTES = 64 * 1024


class HttpError(Exception):
    """The peer sent something that is not HTTP/1.1 (or broke off in the middle of a message)."""


@dataclass(frozen=True, slots=True)
class Head:
    """A request or status line split on spaces, and the header fields (names lower-cased)."""

    start: tuple[str, ...]
    headers: dict[str, str]

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


async def read_head(reader: asyncio.StreamReader, prefix: bytes = b"") -> Head | None:
    """The next message head; None when the peer closed before sending one."""
    try:
        raw = prefix + await reader.readuntil(b"\r\n\r\n") if b"\r\n\r\n" not in prefix else prefix
    except asyncio.IncompleteReadError as exc:
        if not prefix and not exc.partial:
            return None
        raise HttpError("the connection closed inside a message head") from None
    except asyncio.LimitOverrunError:
        raise HttpError("message head too long") from None
    if len(raw) > MAX_HEAD_BYTES:
        raise HttpError("message head too long")
    lines = raw[:-4].decode("latin-1").split("\r\n")
    start = tuple(lines[0].split(" ", 2))
    if len(start) < 2:
        raise HttpError(f"bad start line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(f"bad header line {line[:80]!r}")
        key = name.lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return Head(start, headers)


async def body_chunks(reader: asyncio.StreamReader, head: Head, *, until_close: bool) -> AsyncIterator[bytes]:
    """The body of the message `head` starts, piece by piece as it arrives. Without Content-Length
    or chunked coding a response body runs until the connection closes (`until_close`), a request
    has none. :class:`HttpError` when it breaks off before its end."""
    try:
        if "chunked" in (head.get("transfer-encoding") or "").lower():
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailer fields
                        pass
                    return
                data = await reader.readexactly(size)
                await reader.readexactly(2)
                yield data
        elif (length := head.get("content-length")) is not None:
            left = int(length)
            while left > 0:
                data = await reader.read(min(left, _READ_BYTES))
                if not data:
                    raise HttpError(f"the body broke off with {left} bytes missing")
                left -= len(data)
                yield data
        elif until_close:
            while data := await reader.read(_READ_BYTES):
                yield data
    except (asyncio.IncompleteReadError, ConnectionError) as exc:
        raise HttpError("the body broke off before its end") from exc
    except (ValueError, asyncio.LimitOverrunError) as exc:
        raise HttpError("bad body framing") from exc


def encode_head(start: str, headers: list[tuple[str, str]]) -> bytes:
    return (start + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    """One piece of a chunked body (an empty `data` is the last chunk)."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"
