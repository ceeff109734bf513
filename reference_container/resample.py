"""Model audio (float32, 24 kHz) to the wire format: s16le PCM at the requested rate.

One :class:`PcmEncoder` per message keeps a streaming soxr resampler, so chunk boundaries leave no
clicks; 24 kHz passes through untouched. Float to int16 is :func:`bidi_tts.audio.float_to_pcm16`
(the project's one convention: x * 32768, clipped; NaN is silence).
"""

from __future__ import annotations

import numpy as np
import soxr

from bidi_tts.audio import float_to_pcm16


class PcmEncoder:
    """Streams float32 model audio out as s16le PCM at `out_rate`."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._stream = (
            None if in_rate == out_rate
            else soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32", quality="HQ")
        )

    def feed(self, audio: np.ndarray) -> bytes:
        """PCM for this chunk (the resampler may hold a few samples back until :meth:`flush`)."""
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        if self._stream is not None:
            audio = self._stream.resample_chunk(audio, last=False)
        return float_to_pcm16(audio)

    def flush(self) -> bytes:
        """The samples the resampler still holds."""
        if self._stream is None:
            return b""
        return float_to_pcm16(self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True))
