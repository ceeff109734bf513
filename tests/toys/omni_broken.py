"""Toy containers in vLLM-Omni's streaming speech dialect that break ONE rule each (tone "speech").

`OmniBaseToy` is a small correct speaker of the dialect, the base the broken ones override one hook of
(tests/toys/omni_good.py is another helper's good toy; this base is only for these). Each toy serves
the dialect on /v1/audio/speech/stream and on /invocations-bidirectional-stream. Audio: a 220 Hz tone,
0.02 s per character (tests.toys.good.tone), in 0.1 s binary frames.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from bidi_tts.chunker import split_sentences
from tests.toys.good import tone

OMNI_PATH = "/v1/audio/speech/stream"
SAMPLE_RATE = 24_000
AUDIO_S_PER_CHAR = 0.02
FRAME_BYTES = 2 * SAMPLE_RATE // 10


class OmniBaseToy:
    """Correct: config first (repeatable between flushes), text buffered, input.done flushes and the
    connection stays open, one audio.start / binary PCM / audio.done per sentence, session.done per flush."""

    def __init__(self) -> None:
        self.frames_received: list[str] = []  # "text"/"binary" per client message, for tests

    # -- hooks (one per rule a broken toy breaks) -----------------------------------------------
    async def receive(self, ws: WebSocket) -> str | bytes | None:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return None
        if message.get("text") is not None:
            self.frames_received.append("text")
            return str(message["text"])
        self.frames_received.append("binary")
        return bytes(message.get("bytes") or b"")

    def buffer_text(self, buffered: str, text: str) -> str:
        return buffered + text

    async def send_audio(self, ws: WebSocket, utterance: int, sentence: int, pcm: bytes) -> None:
        for offset in range(0, len(pcm), FRAME_BYTES):
            await ws.send_bytes(pcm[offset : offset + FRAME_BYTES])

    async def send_audio_done(self, ws: WebSocket, utterance: int, sentence: int, total: int) -> None:
        await ws.send_text(json.dumps({"type": "audio.done", "utterance_index": utterance,
                                       "sentence_index": sentence, "total_bytes": total, "error": False}))

    async def after_flush(self, ws: WebSocket) -> bool:
        """After session.done; True ends the session."""
        return False

    # -- the dialect ----------------------------------------------------------------------------
    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        config: dict[str, Any] | None = None
        buffered, utterance = "", 0
        try:
            while (raw := await self.receive(ws)) is not None:
                try:
                    msg = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    await self.error(ws, "Invalid JSON message")
                    continue
                kind = msg.get("type") if isinstance(msg, dict) else None
                if kind == "session.config":
                    if buffered:
                        await self.error(ws, "session.config cannot be applied while an utterance is in progress")
                    else:
                        config = msg
                elif kind == "session.close":
                    await ws.close(1000)
                    return
                elif config is None:
                    await self.error(ws, f"Expected session.config, got: {kind}")
                elif kind == "input.text" and isinstance(msg.get("text"), str):
                    buffered = self.buffer_text(buffered, msg["text"])
                elif kind == "input.done":
                    count = await self.flush(ws, config, utterance, buffered)
                    await ws.send_text(json.dumps({"type": "session.done", "utterance_index": utterance,
                                                   "total_sentences": count}))
                    buffered, utterance = "", utterance + 1
                    if await self.after_flush(ws):
                        return
                else:
                    await self.error(ws, f"Unknown message type: {kind}")
        except WebSocketDisconnect:
            return

    async def flush(self, ws: WebSocket, config: dict[str, Any], utterance: int, text: str) -> int:
        if config.get("split_granularity", "none") == "none":
            units = [text.strip()] if text.strip() else []
        else:
            units = split_sentences(text)
        for sentence, unit in enumerate(units):
            start: dict[str, Any] = {"type": "audio.start", "utterance_index": utterance, "sentence_index": sentence,
                                     "sentence_text": unit, "format": "pcm"}
            start.update(sample_rate=SAMPLE_RATE, channels=1)
            await ws.send_text(json.dumps(start))
            pcm = tone(len(unit) * AUDIO_S_PER_CHAR, SAMPLE_RATE)
            await self.send_audio(ws, utterance, sentence, pcm)
            await self.send_audio_done(ws, utterance, sentence, len(pcm))
        return len(units)

    async def error(self, ws: WebSocket, message: str) -> None:
        await ws.send_text(json.dumps({"type": "error", "message": message}))

    async def ping(self, request: Request) -> Response:
        return Response(status_code=200)

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/ping", self.ping, methods=["GET", "POST"]),
            WebSocketRoute(OMNI_PATH, self.websocket),
            WebSocketRoute(protocol.WS_PATH, self.websocket),
        ])


class OmniTextOnlyToy(OmniBaseToy):
    """vLLM-Omni's own receive_text(): a BINARY client frame (what SageMaker sends) kills the session."""

    async def receive(self, ws: WebSocket) -> str | bytes | None:
        return await ws.receive_text()


class OmniCloseAfterFlushToy(OmniBaseToy):
    """Treats input.done as the end of the connection: closes (1000) right after session.done."""

    async def after_flush(self, ws: WebSocket) -> bool:
        await ws.close(1000)
        return True


class OmniNoAudioDoneToy(OmniBaseToy):
    """Never sends audio.done: a sentence's audio has no end marker."""

    async def send_audio_done(self, ws: WebSocket, utterance: int, sentence: int, total: int) -> None:
        return None


class OmniBase64AudioToy(OmniBaseToy):
    """Audio inside JSON (audio.chunk with audio_b64), never as binary frames."""

    async def send_audio(self, ws: WebSocket, utterance: int, sentence: int, pcm: bytes) -> None:
        for chunk_id, offset in enumerate(range(0, len(pcm), FRAME_BYTES)):
            await ws.send_text(json.dumps({
                "type": "audio.chunk", "utterance_index": utterance, "sentence_index": sentence,
                "chunk_id": chunk_id,
                "audio_b64": base64.b64encode(pcm[offset : offset + FRAME_BYTES]).decode("ascii")}))


class OmniDropsBufferToy(OmniBaseToy):
    """Each input.text replaces the buffer: a flush speaks only the last input.text."""

    def buffer_text(self, buffered: str, text: str) -> str:
        return text


BROKEN_OMNI_TOYS: dict[str, type[OmniBaseToy]] = {
    "omni_text_only": OmniTextOnlyToy,
    "omni_close_after_flush": OmniCloseAfterFlushToy,
    "omni_no_audio_done": OmniNoAudioDoneToy,
    "omni_base64_audio": OmniBase64AudioToy,
    "omni_drops_buffer": OmniDropsBufferToy,
}
