"""Toy containers that speak, with espeak-ng (Debian's `espeak-ng` package), and one-defect variants.

The tone toys of good.py cannot be checked by a recognizer; these say the words, robotically, so the
content.* cases can hear them. Each variant breaks one thing a listener notices: a dropped sentence,
two swapped, the previous message again, another session's words, a cut-off end, wrong words.
"""

from __future__ import annotations

import asyncio
import io
import shutil
import subprocess
import wave
from collections.abc import AsyncIterator
from functools import lru_cache

import numpy as np
import soxr
from starlette.websockets import WebSocket

from bidi_tts import protocol
from bidi_tts.chunker import split_sentences
from tests.toys.good import ToyConfig, ToyContainer

ESPEAK = "espeak-ng"
WORDS_PER_MINUTE = 150  # a little slower than espeak's 175: Whisper hears it better


def espeak_available() -> bool:
    return shutil.which(ESPEAK) is not None


@lru_cache(maxsize=256)
def speak(text: str, sample_rate: int) -> bytes:
    """s16le mono PCM of espeak-ng saying `text`, at `sample_rate`."""
    wav = subprocess.run([ESPEAK, "--stdout", "-v", "en-us", "-s", str(WORDS_PER_MINUTE), text],
                         capture_output=True, check=True, timeout=30).stdout
    with wave.open(io.BytesIO(wav)) as w:
        rate, pcm = w.getframerate(), w.readframes(w.getnframes())
    if rate == sample_rate:
        return pcm
    samples = np.frombuffer(pcm, dtype="<i2")
    return soxr.resample(samples, rate, sample_rate, quality="HQ").astype("<i2").tobytes()


class SpeakingToy(ToyContainer):
    """A correct container whose synthesizer speaks each sentence with espeak-ng, streamed in frames."""

    def __init__(self) -> None:
        # A little time per sentence, as a model takes: a message has a moment mid-synthesis (the
        # cases about one say NOT-JUDGED on a container that makes everything at once).
        super().__init__(ToyConfig(first_audio_delay_s=0.05))

    def sentences(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> list[str]:
        """What to say for `request` (variants change this)."""
        return split_sentences(request.text) or [request.text]

    async def spoken(self, sentences: list[str], sample_rate: int) -> list[bytes]:
        return [await asyncio.to_thread(speak, s, sample_rate) for s in sentences]

    async def frames(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> AsyncIterator[bytes]:
        step = int(self.config.frame_s * request.sample_rate) * 2
        for pcm in await self.spoken(self.sentences(ws, request), request.sample_rate):
            await asyncio.sleep(self.config.first_audio_delay_s)
            for offset in range(0, len(pcm), step):
                yield pcm[offset : offset + step]

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        async for chunk in self.frames(ws, request):
            await ws.send_bytes(chunk)
            total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class DropsSentenceToy(SpeakingToy):
    """Loses the second sentence of every multi-sentence message."""

    def sentences(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> list[str]:
        said = super().sentences(ws, request)
        return said[:1] + said[2:] if len(said) > 2 else said


class SwapsSentencesToy(SpeakingToy):
    """Says the second and third sentences in the wrong order (a reordering worker pool)."""

    def sentences(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> list[str]:
        said = super().sentences(ws, request)
        return [said[0], said[2], said[1], *said[3:]] if len(said) > 2 else said


class RepeatsPreviousToy(SpeakingToy):
    """A stale per-session buffer: from the second message on, says the previous message again."""

    def __init__(self) -> None:
        super().__init__()
        self.previous: dict[int, list[str]] = {}

    def sentences(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> list[str]:
        said = super().sentences(ws, request)
        stale = self.previous.get(id(ws), said)
        self.previous[id(ws)] = said
        return stale


class CrossTalkSpeakingToy(SpeakingToy):
    """One shared 'current text' for all sessions: concurrent sessions all hear the latest request."""

    def __init__(self) -> None:
        super().__init__()
        self.latest: list[str] = []

    def sentences(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> list[str]:
        self.latest = super().sentences(ws, request)
        return self.latest

    async def spoken(self, sentences: list[str], sample_rate: int) -> list[bytes]:
        await asyncio.sleep(0.2)  # long enough for a concurrent request to overwrite the shared text
        return await super().spoken(self.latest, sample_rate)


class TruncatesEndToy(SpeakingToy):
    """Never flushes its last buffer: the second half of the last sentence is not sent."""

    async def spoken(self, sentences: list[str], sample_rate: int) -> list[bytes]:
        pcm = await super().spoken(sentences, sample_rate)
        cut = len(pcm[-1]) // 2
        pcm[-1] = pcm[-1][: cut - cut % 2]
        return pcm


class WrongWordsToy(SpeakingToy):
    """Says every other word wrong (a broken phonemizer or vocabulary)."""

    def sentences(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> list[str]:
        swap = ["purple", "engine", "window", "seven", "river", "market"]
        out = []
        for sentence in super().sentences(ws, request):
            parts = sentence.split()
            out.append(" ".join(swap[k % len(swap)] if k % 2 else w for k, w in enumerate(parts)))
        return out
