"""One WebSocket session in vLLM-Omni's streaming speech dialect (reference_container.omni_wire).

The reader and the processor, the inbox, the streaming of audio and the bounded sends are
:class:`reference_container.session_base.SessionBase`'s, as for the kokoro-sample session: frames are
read TEXT and BINARY alike (SageMaker delivers client parts as BINARY; vLLM-Omni's own handler reads
text frames only, the defect this session must not have). Each spoken unit (a flush, a sentence or a
clause, by `split_granularity`) goes through the same scheduler and synthesizer as a kokoro message
and is framed as audio.start, binary audio, audio.done; each `input.done` ends with session.done.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket

from bidi_tts import protocol
from reference_container import omni_wire as wire
from reference_container.drain import GOING_AWAY_REASON
from reference_container.omni_splitter import UnitSplitter
from reference_container.scheduler import Busy, JobCancelled, JobFailed
from reference_container.session_base import SessionBase
from reference_container.state import AppState
from reference_container.streaming import MessageStats

_session_ids = itertools.count(1)


@dataclass(eq=False)
class _Item:
    message: wire.OmniMessage | None = None
    error: wire.OmniError | None = None
    close_code: int | None = None  # a close the session itself decided (idle, drain)
    close_reason: str = ""


class OmniSession(SessionBase[_Item]):
    """Serves one vLLM-Omni dialect connection until session.close, disconnect, idle timeout or a drain."""

    def __init__(self, ws: WebSocket, state: AppState) -> None:
        super().__init__(ws, state, f"omni-{next(_session_ids)}")
        self._taking = True  # False once a close (the client's, idle, drain) is queued
        self._stopping = False  # drain or stop_now: speak no further unit
        self._config_seen = False
        self.config: wire.SessionConfig | None = None
        self._splitter = UnitSplitter("none")
        self._utterance = 0
        self._sentence = 0
        self._utterance_open = False

    def _open_fields(self) -> Mapping[str, Any]:
        return {"dialect": "vllm-omni"}

    def _end_fields(self) -> Mapping[str, Any]:
        return {"utterances": self._utterance}

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
    async def _receive(self) -> Mapping[str, Any] | None:
        """The next frame, or None when the idle clock ran out (an idle_timeout close is then queued)."""
        settings = self.state.settings
        timeout = settings.omni_idle_timeout_s if self._config_seen else settings.omni_config_timeout_s
        try:
            return await asyncio.wait_for(self.ws.receive(), timeout)
        except TimeoutError:
            if self._busy or self._inbox or not self._taking:
                return None  # the clock runs only while nothing is being done for the client
            self._taking = False
            why = "Idle timeout: no message received" if self._config_seen else "Timeout waiting for session.config"
            self._push(_Item(error=wire.OmniError("idle_timeout", why), close_code=protocol.CloseCode.NORMAL))
            return None

    def _taking_messages(self) -> bool:
        return self._taking

    def _on_disconnect(self) -> None:
        self._taking = False
        self._stopping = True
        self.state.scheduler.cancel_session(self.id)  # the client left: its work stops

    def _on_data(self, data: bytes | str) -> None:
        try:
            parsed = wire.parse(data, self.state.limits)
        except wire.OmniError as exc:
            self._push(_Item(error=exc))
            return
        if isinstance(parsed, wire.SessionConfig):
            self._config_seen = True
        if isinstance(parsed, wire.SessionClose):
            self._taking = False
        elif self._inbox_full():
            self._push(_Item(error=wire.OmniError(
                protocol.ErrorCode.BUSY.value, "Too many messages are waiting in this session")))
            return
        self._push(_Item(message=parsed))

    # -- processing -----------------------------------------------------------------------------
    def _closing(self) -> None:
        self._taking = False

    def _peer_gone(self) -> None:
        """Nothing to move: this dialect keeps no session state beyond what it takes (the reader sees the
        disconnect)."""

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
        frames = self._audio(request, stats)
        wav = config.response_format == "wav"
        if not config.stream_audio:  # the whole unit in one binary frame, as vLLM-Omni sends it
            pcm = b"".join([frame async for frame in frames])
            stats.audio_bytes = len(pcm)
            await self._send_bytes((wire.wav_header(wire.SAMPLE_RATE, len(pcm)) if wav else b"") + pcm)
            return
        if wav:
            await self._send_bytes(wire.wav_header(wire.SAMPLE_RATE, None))
        await self._stream(frames, stats)

    async def _send_error(self, code: str, message: str) -> None:
        await self._send_text(wire.error(code, message))
