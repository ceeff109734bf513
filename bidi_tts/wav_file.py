"""Writing WAV files: the file-system edge of :mod:`bidi_tts.audio`, which only makes bytes."""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from bidi_tts.audio import wav_bytes
from bidi_tts.protocol import CHANNELS, DEFAULT_SAMPLE_RATE

__all__ = ["write_wav"]


def write_wav(
    path: str | PathLike[str], pcm: bytes, sample_rate: int = DEFAULT_SAMPLE_RATE, channels: int = CHANNELS
) -> None:
    """Write s16le ``pcm`` to a WAV file at ``path``; ValueError (and no file) when ``pcm`` is not a
    whole number of sample frames."""
    Path(path).write_bytes(wav_bytes(pcm, sample_rate, channels))
