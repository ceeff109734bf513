"""STAND-IN for PyPI's `soundfile` (not installed here): `write(file, data, samplerate, format="WAV")`
only, the one call the vllm proxy's POST path makes; 16-bit PCM WAV as soundfile's default subtype."""

from __future__ import annotations

import wave
from typing import Any

import numpy as np


def write(file: Any, data: Any, samplerate: int, subtype: str | None = None, format: str | None = None) -> None:
    if (format or "WAV").upper() != "WAV":
        raise ValueError(f"stand-in soundfile writes WAV only, not {format}")
    pcm = (np.clip(np.asarray(data, dtype=np.float32), -1.0, 1.0) * 32767).astype("<i2").tobytes()
    with wave.open(file, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(samplerate)
        out.writeframes(pcm)
