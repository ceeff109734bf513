"""Toy containers that see WebSocket frames, not messages: served by the `websockets` library itself.

Starlette hands an app whole, UTF-8-checked messages, so a container built on it cannot get
fragments or TEXT-frame decoding wrong. Containers built on a frame-level API can; these toys
reproduce those bugs. They serve /ping and the WebSocket route only (no POST /invocations).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from http import HTTPStatus

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from bidi_tts import protocol
from tests.toys.good import ToyContainer, free_port


class FrameSocket:
    """The few Starlette WebSocket methods ToyContainer.synthesize uses, on a websockets connection."""

    def __init__(self, connection: ServerConnection) -> None:
        self.connection = connection

    async def send_text(self, data: str) -> None:
        await self.connection.send(data)

    async def send_bytes(self, data: bytes) -> None:
        await self.connection.send(data)

    async def close(self, code: int = 1000) -> None:
        await self.connection.close(code)


class RawFramesToy(ToyContainer):
    """Reads each client message as its frames' payloads; subclasses say how they become messages."""

    socket_class: type[FrameSocket] = FrameSocket  # how it writes its messages

    async def messages(self, connection: ServerConnection) -> AsyncIterator[bytes | str]:
        """The correct way: whole messages, TEXT frames UTF-8-checked by the library."""
        while True:
            yield await connection.recv()

    async def handle(self, connection: ServerConnection) -> None:
        ws = self.socket_class(connection)
        try:
            async for data in self.messages(connection):
                try:
                    message = self.parse(data)
                except protocol.ProtocolError as exc:
                    await ws.send_text(protocol.error_from(exc))
                    continue
                if isinstance(message, protocol.CloseRequest):
                    await ws.close(protocol.CloseCode.NORMAL)
                    return
                if isinstance(message, protocol.SynthesizeRequest):
                    await self.synthesize(ws, message)  # type: ignore[arg-type]
        except ConnectionClosed:
            return

    def answer_http(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path == "/ping":
            return connection.respond(HTTPStatus.OK, "")
        if request.path.split("?")[0] != protocol.WS_PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "Not Found\n")
        return None


class FramePerMessageToy(RawFramesToy):
    """Treats every frame as a message: a fragmented message becomes several broken ones."""

    async def messages(self, connection: ServerConnection) -> AsyncIterator[bytes | str]:
        while True:
            async for fragment in connection.recv_streaming():
                yield fragment


class FragmentDecodeToy(RawFramesToy):
    """Reassembles fragments, but decodes each fragment as UTF-8 on its own: a character split
    across two fragments is refused as invalid UTF-8."""

    async def messages(self, connection: ServerConnection) -> AsyncIterator[bytes | str]:
        while True:
            parts: list[str] = []
            failed = False
            async for fragment in connection.recv_streaming(decode=False):
                try:
                    parts.append(bytes(fragment).decode("utf-8"))
                except UnicodeDecodeError:
                    failed = True
            yield b"\xff" if failed else "".join(parts)  # b"\xff": let the parser answer invalid_utf8


class LenientTextFramesToy(RawFramesToy):
    """Skips the UTF-8 check of TEXT frames (recv(decode=False)) and decodes with errors='replace'."""

    async def messages(self, connection: ServerConnection) -> AsyncIterator[bytes | str]:
        while True:
            data = await connection.recv(decode=False)
            yield bytes(data).decode("utf-8", errors="replace")


class RawServerThread:
    """Runs a RawFramesToy on 127.0.0.1 in a background thread, like good.ServerThread."""

    def __init__(self, toy: RawFramesToy) -> None:
        self.toy = toy
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RawServerThread:
        self.thread.start()

        async def start() -> Server:
            return await serve(self.toy.handle, "127.0.0.1", self.port, process_request=self.toy.answer_http,
                               max_size=16 * 1024 * 1024)

        self.server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.close()
            asyncio.run_coroutine_threadsafe(self.server.wait_closed(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()
