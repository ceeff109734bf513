"""A correct vLLM-Omni toy: the streaming speech WebSocket (/v1/audio/speech/stream) with sine tones.

A stand-in, not vLLM-Omni: its wire follows vllm_omni/entrypoints/openai/serving_speech_stream.py
(session.config required first, input.text, input.done as a flush, session.close; audio.start,
BINARY PCM, audio.done with total_bytes, session.done, {"type": "error", "message"}), its audio is
the tone of tests/toys/good.py. :class:`OmniToy` reads TEXT and BINARY frames alike (what the suite
calls conforming); :class:`TextOnlyOmniToy` reads with ``receive_text()`` as the real handler does,
so a BINARY frame (what SageMaker delivers unless the client sets DataType=UTF8) breaks it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from bidi_tts.chunker import IncrementalSentenceChunker
from bidi_tts.dialects.vllm_omni import ROUTE
from tests.toys.good import ToyConfig, ToySynthesizer

NATIVE_RATE = 24_000  # the toy's "model-native" rate, as Kokoro's
FORMATS = {"wav", "pcm", "flac", "mp3", "aac", "opus"}
CONFIG_TIMEOUT_S, IDLE_TIMEOUT_S = 10.0, 30.0  # vLLM-Omni's defaults


class _Config:
    def __init__(self, fields: dict[str, Any], voices: frozenset[str]) -> None:
        speed = fields.get("speed", 1.0)
        if speed is not None and (isinstance(speed, bool) or not isinstance(speed, int | float)
                                  or not 0.25 <= speed <= 4.0):
            raise ValueError(f"speed must be between 0.25 and 4.0, got {speed!r}")
        fmt = fields.get("response_format", "wav")
        if fmt not in FORMATS:
            raise ValueError(f"response_format {fmt!r} is not one of {sorted(FORMATS)}")
        voice = fields.get("voice")
        if voice is not None and voice not in voices:
            raise ValueError(f"unknown voice {voice!r}")
        self.voice = voice or protocol.DEFAULT_VOICE
        self.speed = float(speed if speed is not None else 1.0)
        self.response_format = fmt
        self.stream_audio = fields.get("stream_audio") is True
        self.split = fields.get("split_granularity", "none")


class OmniToy:
    def __init__(self, config: ToyConfig | None = None) -> None:
        self.config = config or ToyConfig()
        self.synth = ToySynthesizer(self.config)
        self.frames_received: list[str] = []

    async def receive_text(self, ws: WebSocket) -> str | None:
        """One client message as text; None when the client left."""
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return None
        if message.get("text") is not None:
            self.frames_received.append("text")
            return str(message["text"])
        self.frames_received.append("binary")
        return bytes(message.get("bytes") or b"").decode("utf-8", errors="replace")

    async def ping(self, request: Request) -> Response:
        return Response(status_code=200)

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            await self._session(ws)
        except WebSocketDisconnect:
            return
        except Exception as exc:  # as the real handler: an internal error is reported, then the session ends
            await _error(ws, f"Internal error: {exc}")

    async def _session(self, ws: WebSocket) -> None:
        config: _Config | None = None
        chunker = IncrementalSentenceChunker()
        buffered: list[str] = []
        utterance = sentence = 0
        open_utterance = False
        while True:
            try:
                raw = await asyncio.wait_for(self.receive_text(ws),
                                             CONFIG_TIMEOUT_S if config is None else IDLE_TIMEOUT_S)
            except TimeoutError:
                await _error(ws, "Timeout waiting for session.config" if config is None else "Idle timeout")
                return
            if raw is None:
                return
            msg = await _parse(ws, raw)
            if msg is None:
                if config is None:
                    return
                continue
            kind = msg.get("type")
            if kind == "session.config":
                if open_utterance:
                    await _error(ws, "session.config cannot be applied while an utterance is in progress")
                    continue
                try:
                    config = _Config({k: v for k, v in msg.items() if k != "type"}, self.config.voices)
                except ValueError as exc:
                    await _error(ws, f"Invalid session config: {exc}")
                    if config is None:
                        return
                    continue
                chunker, buffered = IncrementalSentenceChunker(), []
            elif config is None:
                await _error(ws, f"Expected session.config, got: {kind}")
                return
            elif kind == "input.text":
                text = msg.get("text", "")
                if not isinstance(text, str):
                    await _error(ws, "input.text requires a string value")
                    continue
                open_utterance = open_utterance or bool(text)
                if config.split == "none":
                    buffered = self.buffer(buffered, text)
                units = self.units(chunker, text) if config.split != "none" else []
                for unit in units:
                    await self._speak(ws, config, unit, utterance, sentence)
                    sentence += 1
            elif kind == "input.done":
                rest = chunker.flush() if config.split != "none" else ("".join(buffered).strip() or None)
                buffered = []
                if rest:
                    await self._speak(ws, config, rest, utterance, sentence)
                    sentence += 1
                await ws.send_json({"type": "session.done", "utterance_index": utterance,
                                    "total_sentences": sentence})
                utterance, sentence, open_utterance = utterance + 1, 0, False
                if await self.after_flush(ws):
                    return
            elif kind == "session.close":
                await ws.close()
                return
            else:
                await _error(ws, f"Unknown message type: {kind}")

    async def _speak(self, ws: WebSocket, config: _Config, text: str, utterance: int, sentence: int) -> None:
        start: dict[str, Any] = {"type": "audio.start", "utterance_index": utterance, "sentence_index": sentence,
                                 "sentence_text": text, "format": config.response_format}
        streamed_pcm = config.stream_audio and config.response_format == "pcm"
        request = protocol.SynthesizeRequest(text=text, voice=config.voice, speed=config.speed,
                                             sample_rate=NATIVE_RATE)
        total = 0
        if not streamed_pcm:
            await ws.send_json(start)
        async for chunk in self.synth.stream(request):
            if streamed_pcm and not total:  # audio.start goes with the first chunk and states its format
                await ws.send_json({**start, "sample_rate": NATIVE_RATE, "channels": 1})
            await self.send_audio(ws, chunk)
            total += len(chunk)
        if streamed_pcm and not total:
            await ws.send_json(start)
        await self.audio_done(ws, {"type": "audio.done", "utterance_index": utterance, "sentence_index": sentence,
                                   "total_bytes": total, "error": False})

    # -- hooks: the tests' broken variants override one each ------------------------------------
    def buffer(self, buffered: list[str], text: str) -> list[str]:
        """The text kept for the flush (split_granularity none) after one more input.text."""
        return [*buffered, text]

    def units(self, chunker: IncrementalSentenceChunker, text: str) -> list[str]:
        """The sentences ready to speak after one more input.text (split_granularity sentence)."""
        return chunker.feed(text)

    async def send_audio(self, ws: WebSocket, chunk: bytes) -> None:
        await ws.send_bytes(chunk)

    async def audio_done(self, ws: WebSocket, done: dict[str, Any]) -> None:
        await ws.send_json(done)

    async def after_flush(self, ws: WebSocket) -> bool:
        """After session.done; True ends the session."""
        return False

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/ping", self.ping, methods=["GET", "POST"]),
                                 WebSocketRoute(ROUTE, self.websocket)])


class TextOnlyOmniToy(OmniToy):
    """Reads as vLLM-Omni's handler does (``websocket.receive_text()``): a BINARY frame is an internal error."""

    async def receive_text(self, ws: WebSocket) -> str | None:
        self.frames_received.append("text?")
        return await ws.receive_text()


async def _parse(ws: WebSocket, raw: str) -> dict[str, Any] | None:
    try:
        msg = json.loads(raw)
    except json.JSONDecodeError:
        await _error(ws, "Invalid JSON message")
        return None
    if not isinstance(msg, dict):
        await _error(ws, "WebSocket messages must be JSON objects")
        return None
    return msg


async def _error(ws: WebSocket, message: str) -> None:
    try:
        await ws.send_json({"type": "error", "message": message})
    except Exception:  # the connection may be gone already
        pass
