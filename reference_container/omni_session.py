"""One WebSocket session in vLLM-Omni's streaming speech dialect (reference_container.omni_wire).

Built like the kokoro-sample session (reference_container.ws_session): a *reader* takes every frame off
the socket at once with `websocket.receive()`, TEXT and BINARY alike: SageMaker delivers client parts
as BINARY (vLLM-Omni's own handler reads text frames only, the defect this session must not have),
and a *processor* handles messages strictly in order. Each spoken unit (a flush, a sentence or a
clause, by `split_granularity`) goes through the same scheduler and synthesizer as a kokoro message
(reference_container.streaming.message_audio) and is framed as audio.start, binary audio,
audio.done; each `input.done` ends with session.done.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from reference_container import omni_wire as wire
from reference_container.drain import GOING_AWAY_REASON
from reference_container.logs import kv
from reference_container.omni_splitter import UnitSplitter
from reference_container.scheduler import Busy, JobCancelled, JobFailed
from reference_container.state import AppState
from reference_container.streaming import MessageStats, message_audio
from reference_container.transport_abort import ABORT_KEY

log = logging.getLogger(__name__)

_session_ids = itertools.count(1)
MAX_INBOX = 1024  # messages received but not yet handled; past this the client is flooding


@dataclass(eq=False)
class _Item:
    message: wire.OmniMessage | None = None
    error: wire.OmniError | None = None
    close_code: int | None = None  # a close the session itself decided (idle, drain)
    close_reason: str = ""


class _SendFailed(Exception):
    """The peer is gone; stop working for it."""


class OmniSession:
    """Serves one vLLM-Omni dialect connection until session.close, disconnect, idle timeout or a drain."""

    def __init__(self, ws: WebSocket, state: AppState) -> None:
        self.ws = ws
        self.state = state
        self.id = f"omni-{next(_session_ids)}"
        self._inbox: deque[_Item] = deque()
        self._wakeup = asyncio.Event()
        self._taking = True  # False once a close (the client's, idle, drain) is queued
        self._busy = False  # the processor is handling a message: the idle clock does not run
        self._stopping = False  # drain or stop_now: speak no further unit
        self._config_seen = False
        self.config: wire.SessionConfig | None = None
        self._splitter = UnitSplitter("none")
        self._utterance = 0
        self._sentence = 0
        self._utterance_open = False
        self._opened = time.perf_counter()

    async def run(self) -> None:
        await self.ws.accept()
        log.info(kv(event="session_open", session=self.id, dialect="vllm-omni"))
        self.state.drain.register(self)
        reader = asyncio.create_task(self._read_loop(), name=f"{self.id}-reader")
        processor = asyncio.create_task(self._process_loop(), name=f"{self.id}-processor")
        try:
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
            log.info(kv(event="session_end", session=self.id, utterances=self._utterance,
                        duration_s=time.perf_counter() - self._opened))

    # -- stopping (reference_container.shutdown) -------------------------------------------------
    def drain(self) -> None:
        """The container is stopping: finish the unit being spoken, drop the rest, close 1001."""
        if not self._taking:
            return
        self._taking = False
        self._stopping = True
        self._inbox.clear()
        self._push(_Item(close_code=protocol.CloseCode.GOING_AWAY, close_reason=GOING_AWAY_REASON))

    def stop_now(self) -> None:
        self._stopping = True
        self.state.scheduler.cancel_session(self.id)

    # -- reading --------------------------------------------------------------------------------
    def _push(self, item: _Item) -> None:
        self._inbox.append(item)
        self._wakeup.set()

    async def _read_loop(self) -> None:
        settings = self.state.settings
        while True:
            timeout = settings.omni_idle_timeout_s if self._config_seen else settings.omni_config_timeout_s
            try:
                message = await asyncio.wait_for(self.ws.receive(), timeout)
            except TimeoutError:
                if self._busy or self._inbox or not self._taking:
                    continue  # the clock runs only while nothing is being done for the client
                self._taking = False
                why = "Idle timeout: no message received" if self._config_seen else \
                    "Timeout waiting for session.config"
                self._push(_Item(error=wire.OmniError("idle_timeout", why),
                                 close_code=protocol.CloseCode.NORMAL))
                continue
            if message["type"] == "websocket.disconnect":
                self._taking = False
                self._stopping = True
                self.state.scheduler.cancel_session(self.id)  # the client left: its work stops
                return
            data: bytes | str | None = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            if not self._taking:
                continue
            try:
                parsed = wire.parse(data, self.state.limits)
            except wire.OmniError as exc:
                self._push(_Item(error=exc))
                continue
            if isinstance(parsed, wire.SessionConfig):
                self._config_seen = True
            if isinstance(parsed, wire.SessionClose):
                self._taking = False
            elif len(self._inbox) >= MAX_INBOX:
                self._push(_Item(error=wire.OmniError(
                    protocol.ErrorCode.BUSY.value, "Too many messages are waiting in this session")))
                continue
            self._push(_Item(message=parsed))

    # -- processing -----------------------------------------------------------------------------
    async def _process_loop(self) -> None:
        with contextlib.suppress(_SendFailed):
            while True:
                while not self._inbox:
                    self._wakeup.clear()
                    await self._wakeup.wait()
                item = self._inbox.popleft()
                self._busy = True
                try:
                    if await self._handle(item):
                        return
                finally:
                    self._busy = False

    async def _handle(self, item: _Item) -> bool:
        """Handle one item; True when the session has closed."""
        if item.error is not None:
            await self._send_error(item.error.code, item.error.message)
        if item.close_code is not None:
            await self._close(item.close_code, item.close_reason)
            return True
        message = item.message
        if message is None:
            return False
        if isinstance(message, wire.SessionClose):
            await self._close(protocol.CloseCode.NORMAL)
            return True
        if isinstance(message, wire.SessionConfig):
            if self._utterance_open:
                await self._send_error("config_in_utterance", "session.config cannot be applied while an "
                                       "utterance is in progress; send input.done first")
            else:
                self.config, self._splitter = message, UnitSplitter(message.split_granularity)
            return False
        if self.config is None:
            kind = "input.text" if isinstance(message, wire.InputText) else "input.done"
            await self._send_error("config_required", f"Expected session.config, got: {kind}")
            return False
        if isinstance(message, wire.InputText):
            await self._take_text(message.text)
        else:
            for unit in self._splitter.flush():
                await self._speak(unit)
            if self._stopping:
                return False  # a drain cut the flush short: its close follows, not a session.done
            await self._send_text(wire.session_done(self._utterance, self._sentence))
            self._utterance, self._sentence, self._utterance_open = self._utterance + 1, 0, False
        return False

    async def _take_text(self, text: str) -> None:
        limit = self.state.limits.max_text_chars
        if self._splitter.pending_chars + len(text) > limit:
            await self._send_error(protocol.ErrorCode.TEXT_TOO_LONG.value,
                                   f"input.text would hold {self._splitter.pending_chars + len(text)} "
                                   f"characters not yet spoken; this container accepts at most {limit}")
            return
        if text:
            self._utterance_open = True
        for unit in self._splitter.feed(text):
            await self._speak(unit)

    async def _speak(self, text: str) -> None:
        """One unit: audio.start, its audio as binary frames, audio.done (error true if it failed)."""
        config = self.config
        assert config is not None
        utterance, sentence = self._utterance, self._sentence
        self._sentence += 1
        if self._stopping:
            return
        request = protocol.SynthesizeRequest(text=text, voice=config.voice, speed=config.speed,
                                             sample_rate=wire.SAMPLE_RATE,
                                             request_id=f"{self.id}-{utterance}-{sentence}")
        if not self.state.ready.is_set():
            await self.state.ready.wait()
        await self._send_text(wire.audio_start(config, utterance, sentence, text))
        stats = MessageStats(self.id, request.request_id)
        failed = True
        try:
            with self.state.scheduler.admit():
                await self._send_audio(config, request, stats)
            failed = False
        except Busy:
            await self._send_error(protocol.ErrorCode.BUSY.value, "The container is busy; try again")
        except JobCancelled:
            pass
        except JobFailed:
            await self._send_error(protocol.ErrorCode.INTERNAL.value,
                                   f"Generation failed for utterance {utterance}, sentence {sentence}")
        finally:
            self.state.scheduler.cancel_session(self.id)  # leftovers of a stopped unit
        stats.log("failed" if failed else "complete")
        await self._send_text(wire.audio_done(utterance, sentence, stats.audio_bytes, failed=failed))

    async def _send_audio(self, config: wire.SessionConfig, request: protocol.SynthesizeRequest,
                          stats: MessageStats) -> None:
        frames = message_audio(self.state.scheduler, request, stats, model_rate=self.state.synth.sample_rate,
                               first_clause_chars=self.state.settings.first_clause_chars, cost=self.state.cost)
        wav = config.response_format == "wav"
        if not config.stream_audio:  # the whole unit in one binary frame, as vLLM-Omni sends it
            pcm = b"".join([frame async for frame in frames])
            stats.audio_bytes = len(pcm)
            await self._send_bytes((wire.wav_header(wire.SAMPLE_RATE, len(pcm)) if wav else b"") + pcm)
            return
        if wav:
            await self._send_bytes(wire.wav_header(wire.SAMPLE_RATE, None))
        async for frame in frames:
            await self._send_bytes(frame)
            if stats.first_audio_at is None:
                stats.first_audio_at = time.perf_counter()
            stats.audio_bytes += len(frame)

    # -- sending: bounded like ws_session's (a client that reads nothing is dropped) ---------------
    async def _send_error(self, code: str, message: str) -> None:
        await self._send_text(wire.error(code, message))

    async def _send_text(self, text: str) -> None:
        await self._send(self.ws.send_text(text))

    async def _send_bytes(self, data: bytes) -> None:
        await self._send(self.ws.send_bytes(data))

    async def _send(self, sending: Coroutine[Any, Any, None]) -> None:
        try:
            async with asyncio.timeout(self.state.settings.send_timeout_s):
                await sending
        except TimeoutError as exc:
            log.warning(kv(event="send_timeout", session=self.id))
            abort = self.ws.scope.get(ABORT_KEY)
            if abort is not None:
                abort()
            raise _SendFailed from exc
        except (WebSocketDisconnect, RuntimeError, OSError) as exc:
            raise _SendFailed from exc

    async def _close(self, code: int, reason: str = "") -> None:
        self._taking = False
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            await self.ws.close(code, reason)
