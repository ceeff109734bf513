"""vLLM-Omni toys that break one rule each: tests/toys/omni_good.py with one hook overridden.

Each entry: the toy, the case that must fail on it, and a phrase of the failure detail that names
the cause (tests/conformance_suite/test_dialect_suite.py).
"""

from __future__ import annotations

import base64
from typing import Any

from starlette.websockets import WebSocket

from bidi_tts.chunker import IncrementalSentenceChunker
from tests.toys.omni_good import OmniToy


class NoAudioDoneToy(OmniToy):
    """A sentence's audio never gets its audio.done."""

    async def audio_done(self, ws: WebSocket, done: dict[str, Any]) -> None:
        return None


class DropsPendingTextToy(OmniToy):
    """Each input.text replaces the text still waiting to be spoken: a flush loses sentences."""

    def units(self, chunker: IncrementalSentenceChunker, text: str) -> list[str]:
        chunker.flush()
        return chunker.feed(text)


class Base64AudioToy(OmniToy):
    """Audio as audio.chunk JSON with audio_b64 (vLLM-Omni's word-timestamp form), never BINARY."""

    async def send_audio(self, ws: WebSocket, chunk: bytes) -> None:
        await ws.send_json({"type": "audio.chunk", "utterance_index": 0, "sentence_index": 0,
                            "audio_b64": base64.b64encode(chunk).decode("ascii")})


class CloseAfterFlushToy(OmniToy):
    """Takes input.done for the end of the connection: closes right after session.done."""

    async def after_flush(self, ws: WebSocket) -> bool:
        await ws.close(1000)
        return True


BROKEN_OMNI: dict[str, tuple[type[OmniToy], str, str]] = {
    "no_audio_done": (NoAudioDoneToy, "audio.order.1", "before audio.done of sentences [0]"),
    "drops_pending_text": (DropsPendingTextToy, "isolation.concurrent.1", "input.text parts"),
    "base64_audio": (Base64AudioToy, "audio.binary.1", "audio inside a JSON control frame"),
    "close_after_flush": (CloseAfterFlushToy, "session.multi.1", "1000"),
}
