"""A toy shaped like the reference container's session: one task reads every frame at once into an
inbox, another handles the inbox in order, and valid messages past `bound` unread ones overflow it.
`overflow="busy"` answers each with a coded `busy` error in its turn (CONTRACT.md: `busy`, the session
stays usable); `overflow="close"` closes the session with 1011, as a mutant of the reference
container's ws_session.py did (robust.flood.1's 16 messages never reached the bound)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Literal

from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from tests.toys.good import ToyConfig, ToyContainer

Item = protocol.SynthesizeRequest | protocol.ProtocolError | None  # None: close


class InboxToy(ToyContainer):
    def __init__(self, *, overflow: Literal["busy", "close"], bound: int = 1024) -> None:
        # 0.3 s per sentence: a 4-sentence message keeps the handler busy while a flood is read.
        super().__init__(ToyConfig(first_audio_delay_s=0.3))
        self.overflow = overflow
        self.bound = bound
        self.overflowed = 0  # valid messages that met a full inbox, for tests

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        inbox: deque[Item] = deque()
        wakeup = asyncio.Event()
        tasks = [asyncio.create_task(self._read(ws, inbox, wakeup)),
                 asyncio.create_task(self._handle(ws, inbox, wakeup))]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError):
                    await task

    async def _read(self, ws: WebSocket, inbox: deque[Item], wakeup: asyncio.Event) -> None:
        while (data := await self.receive_message(ws)) is not None:
            try:
                message = self.parse(data)
            except protocol.ProtocolError as exc:
                inbox.append(exc)
            else:
                if isinstance(message, protocol.CloseRequest):
                    inbox.append(None)
                elif isinstance(message, protocol.SynthesizeRequest):
                    if len(inbox) >= self.bound:
                        self.overflowed += 1
                        if self.overflow == "close":
                            await ws.close(protocol.CloseCode.INTERNAL_ERROR)
                            return
                        inbox.append(protocol.ProtocolError(protocol.ErrorCode.BUSY, "Too many messages are "
                                                            "waiting in this session.", request_id=message.request_id))
                    else:
                        inbox.append(message)
            wakeup.set()

    async def _handle(self, ws: WebSocket, inbox: deque[Item], wakeup: asyncio.Event) -> None:
        while True:
            while not inbox:
                wakeup.clear()
                await wakeup.wait()
            item = inbox.popleft()
            if item is None:
                await ws.close(protocol.CloseCode.NORMAL)
                return
            if isinstance(item, protocol.ProtocolError):
                await ws.send_text(protocol.error_from(item))
            else:
                await self.synthesize(ws, item)
