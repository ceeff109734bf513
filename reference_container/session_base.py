"""What every WebSocket session of the container does, whichever dialect it speaks.

Two tasks per session: a *reader* that takes every frame off the socket at once (raw
`websocket.receive()`, so TEXT and BINARY frames are treated alike: SageMaker sends BINARY), and a
*processor* that handles the received items strictly in order. Because the reader runs while the
processor synthesizes, a cancel, a close or a client disconnect is seen mid-message. This base holds
the run (accept, the two tasks, the end), the inbox and its wait, the streaming of one message's
audio, the bounded sends and the close; a dialect (:mod:`reference_container.ws_session`, the
kokoro-sample protocol; :mod:`reference_container.omni_session`, vLLM-Omni's) decides only the wire:
what a frame means, what is answered, and when the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from reference_container.logs import kv
from reference_container.scheduler import JobCancelled
from reference_container.state import AppState
from reference_container.streaming import MessageStats, message_audio
from reference_container.transport_abort import ABORT_KEY

log = logging.getLogger(__name__)

MAX_INBOX = 1024  # messages received but not yet handled; past this the client is flooding

class SendFailed(Exception):
    """The peer is gone (or reads nothing): stop working for it."""


class SessionBase[Item](ABC):
    """Serves one WebSocket connection until the dialect's close, a disconnect or a fatal error."""

    def __init__(self, ws: WebSocket, state: AppState, session_id: str) -> None:
        self.ws = ws
        self.state = state
        self.id = session_id
        self._inbox: deque[Item] = deque()
        self._wakeup = asyncio.Event()
        self._busy = False  # the processor is handling an item
        self._opened = time.perf_counter()

    # -- what a dialect decides ------------------------------------------------------------------------
    @abstractmethod
    def drain(self) -> None:
        """The container is stopping (reference_container.shutdown): finish what is under way, then close 1001."""

    @abstractmethod
    def stop_now(self) -> None:
        """The drain deadline: stop what is under way, then close."""

    @abstractmethod
    def _taking_messages(self) -> bool:
        """Whether a frame received now is still read (not after a close was queued)."""

    @abstractmethod
    def _on_data(self, data: bytes | str) -> None:
        """One data frame: parse it and queue what it asks (or the error it is)."""

    @abstractmethod
    def _on_disconnect(self) -> None:
        """The client has gone: stop its work."""

    @abstractmethod
    async def _handle(self, item: Item) -> bool:
        """Handle one queued item in order; True when the session has ended."""

    def _finished(self) -> bool:
        """With nothing queued: whether the processor can stop waiting (the session has closed)."""
        return False

    @abstractmethod
    def _peer_gone(self) -> None:
        """A send failed: the peer is gone."""

    @abstractmethod
    def _closing(self) -> None:
        """The session is about to send its close frame."""

    def _open_fields(self) -> Mapping[str, Any]:
        """What the session's open line says besides its id."""
        return {}

    def _end_fields(self) -> Mapping[str, Any]:
        """What the session's end line says besides its id and duration (its counts)."""
        return {}

    # -- the run -------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Accept, then read and process concurrently until the session ends."""
        await self.ws.accept()
        log.info(kv(event="session_open", session=self.id, **self._open_fields()))
        self.state.drain.register(self)
        reader = asyncio.create_task(self._read_loop(), name=f"{self.id}-reader")
        processor = asyncio.create_task(self._process_loop(), name=f"{self.id}-processor")
        try:
            # The reader ends only on disconnect; the processor on close, a fatal error or a lost peer.
            done, pending = await asyncio.wait({reader, processor}, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for task in done:
                task.result()
        except Exception:
            log.exception(kv(event="session_failed", session=self.id))
            await self._close(protocol.CloseCode.INTERNAL_ERROR)
        finally:
            reader.cancel()
            processor.cancel()
            self.state.scheduler.cancel_session(self.id)
            self.state.drain.unregister(self)
            log.info(kv(event="session_end", session=self.id, **self._end_fields(),
                        duration_s=time.perf_counter() - self._opened))

    # -- reading -------------------------------------------------------------------------------------
    def _push(self, item: Item) -> None:
        self._inbox.append(item)
        self._wakeup.set()

    def _inbox_full(self) -> bool:
        return len(self._inbox) >= MAX_INBOX

    async def _receive(self) -> Mapping[str, Any] | None:
        """The next ASGI message from the socket; None to read again (a dialect's timeout)."""
        return await self.ws.receive()

    async def _read_loop(self) -> None:
        while True:
            message = await self._receive()
            if message is None:
                continue
            if message["type"] == "websocket.disconnect":
                self._on_disconnect()
                self._wakeup.set()
                return
            data: bytes | str | None = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            if self._taking_messages():
                self._on_data(data)

    # -- processing ----------------------------------------------------------------------------------
    async def _process_loop(self) -> None:
        try:
            while True:
                while not self._inbox:
                    if self._finished():
                        return
                    self._wakeup.clear()
                    await self._wakeup.wait()
                item = self._inbox.popleft()
                self._busy = True
                try:
                    if await self._handle(item):
                        return
                finally:
                    self._busy = False
        except SendFailed:
            self._peer_gone()

    def _audio(self, request: protocol.SynthesizeRequest, stats: MessageStats) -> AsyncIterator[bytes]:
        """One message's PCM frames, through the shared scheduler and synthesizer."""
        return message_audio(self.state.scheduler, request, stats, model_rate=self.state.synth.sample_rate,
                             first_clause_chars=self.state.settings.first_clause_chars, cost=self.state.cost)

    async def _stream(self, frames: AsyncIterator[bytes], stats: MessageStats,
                      cancelled: Callable[[], bool] = lambda: False) -> None:
        """Send each frame as it is made (BINARY), counting the audio; JobCancelled once `cancelled`."""
        async for frame in frames:
            if cancelled():
                raise JobCancelled
            await self._send_bytes(frame)
            if stats.first_audio_at is None:
                stats.first_audio_at = time.perf_counter()
            stats.audio_bytes += len(frame)

    # -- sending -------------------------------------------------------------------------------------
    # A send waits while the client does not read (the transport's write buffer is full). Without a
    # bound, a client that holds its connection open and never reads would keep its session, and its
    # admission slot in the scheduler, forever: so a send that waits longer than the send timeout
    # ends the session as if the peer were gone.
    async def _send_text(self, text: str) -> None:
        await self._send(self.ws.send_text(text))

    async def _send_bytes(self, data: bytes) -> None:
        await self._send(self.ws.send_bytes(data))

    async def _send(self, sending: Coroutine[Any, Any, None]) -> None:
        try:
            async with asyncio.timeout(self.state.settings.send_timeout_s):
                await sending
        except TimeoutError as exc:
            log.warning(kv(event="send_timeout", session=self.id, timeout_s=self.state.settings.send_timeout_s))
            # A graceful close would wait behind the unread bytes too: reset the connection.
            abort = self.ws.scope.get(ABORT_KEY)
            if abort is not None:
                abort()
            raise SendFailed from exc
        except (WebSocketDisconnect, RuntimeError, OSError) as exc:
            raise SendFailed from exc

    async def _close(self, code: int, reason: str = "") -> None:
        self._closing()
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            await self.ws.close(code, reason)
