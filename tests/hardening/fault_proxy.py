"""A TCP proxy on 127.0.0.1 that injects network faults between a client and a container.

Faults: added latency per chunk in either direction, a cut after N bytes from the server (the
connection is reset mid-stream), and a stall (bytes from the server stop flowing, the socket stays
open). Used to show the client library raises typed errors and never hangs past its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass


@dataclass(slots=True)
class Faults:
    latency_s: float = 0.0  # added to every chunk from the server
    cut_after_bytes: int | None = None  # reset the connection once this many server bytes passed
    stall_after_bytes: int | None = None  # stop forwarding server bytes after this many


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, faults: Faults) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.faults = faults
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_r, up_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.close()
            return
        try:
            await asyncio.gather(self._pipe(client_r, up_w, from_server=False),
                                 self._pipe(up_r, client_w, from_server=True))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            for w in (client_w, up_w):
                with contextlib.suppress(Exception):
                    w.close()
            self._tasks.discard(task)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, from_server: bool) -> None:
        passed = 0
        while data := await reader.read(65536):
            if from_server:
                f = self.faults
                if f.latency_s:
                    await asyncio.sleep(f.latency_s)
                if f.stall_after_bytes is not None and passed + len(data) > f.stall_after_bytes:
                    data = data[: max(0, f.stall_after_bytes - passed)]
                    writer.write(data)
                    await writer.drain()
                    await asyncio.Event().wait()  # stall forever (until cancelled)
                if f.cut_after_bytes is not None and passed + len(data) > f.cut_after_bytes:
                    writer.write(data[: max(0, f.cut_after_bytes - passed)])
                    await writer.drain()
                    writer.transport.abort()  # RST-like: no close frame, no FIN handshake
                    return
            passed += len(data)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(Exception):
            writer.write_eof()
