"""Toys whose float audio gets loud: one converts it to int16 without clipping, so that a sample past
full scale wraps around to the opposite sign (`(x * 32767).astype(np.int16)`, as the AWS sample's
containers do); one clips it (bidi_tts.audio.float_to_pcm16); one stays quiet, where wrapping cannot
show. Each sentence is a tone whose loudness swells from a fifth of `peak` to `peak` and back, as a
stressed word does."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import numpy as np

from bidi_tts import protocol
from bidi_tts.audio import float_to_pcm16
from bidi_tts.chunker import split_sentences
from tests.toys.good import ToyConfig, ToyContainer, ToySynthesizer


def swelling_tone(seconds: float, sample_rate: int, peak: float, freq: float = 180.0) -> np.ndarray:
    n = max(2, int(seconds * sample_rate))
    t = np.arange(n) / sample_rate
    envelope = peak * (0.2 + 0.8 * np.sin(np.pi * np.arange(n) / (n - 1)))
    return np.asarray(envelope * np.sin(2 * math.pi * freq * t), dtype=np.float64)


def unclipped_int16(x: np.ndarray) -> bytes:
    """int16 by truncation of the integer, as `astype(np.int16)` does: 1.01 of full scale wraps to -0.99."""
    return np.rint(x * 32767).astype(np.int64).astype("<i2").tobytes()


class _LoudSynthesizer(ToySynthesizer):
    def __init__(self, config: ToyConfig, peak: float, clip: bool) -> None:
        super().__init__(config)
        self.peak, self.clip = peak, clip

    async def stream(self, request: protocol.SynthesizeRequest) -> AsyncIterator[bytes]:
        cfg = self.config
        for sentence in split_sentences(request.text) or [request.text]:
            x = swelling_tone(len(sentence) * cfg.audio_s_per_char / request.speed, request.sample_rate, self.peak)
            pcm = float_to_pcm16(x) if self.clip else unclipped_int16(x)
            step = max(2, int(cfg.frame_s * request.sample_rate) * 2)
            for offset in range(0, len(pcm), step):
                yield pcm[offset : offset + step]


class WrappingToy(ToyContainer):
    """Loud audio (peaks at 1.3 of full scale) converted without clipping: it wraps around."""

    peak, clip = 1.3, False

    def __init__(self) -> None:
        super().__init__()
        self.synth = _LoudSynthesizer(self.config, self.peak, self.clip)


class ClippingToy(WrappingToy):
    """As loud, clipped at full scale: no wrapped sample."""

    peak, clip = 1.3, True


class QuietToy(WrappingToy):
    """Converted as carelessly as WrappingToy, but never loud (peaks at 0.3): nothing wraps."""

    peak, clip = 0.3, False
