"""A toy that synthesizes on its event loop, as the AWS sample's container does (its model is called from
the WebSocket handler without a thread): each sentence blocks the loop for `block_s`, and the loop turns
only between sentences. Idle, it accepts and answers /ping at once (health.accept.1 passes); while any
session synthesizes, nothing else is served."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Collection

from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from bidi_tts.chunker import split_sentences
from tests.toys.good import ToyConfig, ToyContainer, tone


class LoopBlockingToy(ToyContainer):
    """Blocks its event loop for `block_s` per sentence (the model's time, spent on the loop). Its
    messages are read beside the synthesis only so that it stops working for a client that has left
    (uvicorn drops the sends of a closed session silently), which keeps the tests' teardown short."""

    def __init__(self, block_s: float = 1.0) -> None:
        super().__init__()
        self.block_s = block_s
        self.halted = False  # set by a test before it stops the server: the next sentence is not made

    def halt(self) -> None:
        self.halted = True

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        inbox: asyncio.Queue[protocol.ClientMessage | None] = asyncio.Queue()
        gone = asyncio.Event()

        async def read() -> None:
            try:
                async for message in self.requests(ws):
                    await inbox.put(message)
            except WebSocketDisconnect:
                pass
            finally:
                gone.set()
                await inbox.put(None)

        reader = asyncio.create_task(read())
        try:
            while (message := await inbox.get()) is not None:
                if isinstance(message, protocol.CloseRequest):
                    await self.on_close_request(ws)
                    return
                if isinstance(message, protocol.SynthesizeRequest):
                    await self._speak(ws, message, gone)
        except WebSocketDisconnect:
            return
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _speak(self, ws: WebSocket, request: protocol.SynthesizeRequest, gone: asyncio.Event) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        for sentence in split_sentences(request.text) or [request.text]:
            if gone.is_set() or self.halted:
                return
            time.sleep(self.block_s)  # noqa: ASYNC251 (the defect: a synchronous model call on the loop)
            pcm = tone(len(sentence) * self.config.audio_s_per_char / request.speed, request.sample_rate)
            await ws.send_bytes(pcm)
            total += len(pcm)
            # A send that does not wait never yields, so the sample's loop is held for the whole message;
            # this toy lets the loop turn once per sentence (kinder than the sample, and still too slow).
            await asyncio.sleep(0)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class SlowAcceptsToy(ToyContainer):
    """Streams in real time off its loop (a correct container), but holds the WebSocket handshakes
    numbered in `slow_at` (from 1) for `hold_s` before accepting them: outliers, as a loaded machine
    gives now and then, or (many of them) a container slow to accept while busy."""

    def __init__(self, slow_at: Collection[int] = (5,), hold_s: float = 0.4) -> None:
        super().__init__(ToyConfig(realtime_factor=1.0))
        self.slow_at, self.hold_s = frozenset(slow_at), hold_s
        self.handshakes = 0

    async def websocket(self, ws: WebSocket) -> None:
        self.handshakes += 1
        if self.handshakes in self.slow_at:
            await asyncio.sleep(self.hold_s)
        await super().websocket(ws)
