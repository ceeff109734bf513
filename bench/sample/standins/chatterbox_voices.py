"""A voice folder for the Chatterbox proxy: one short WAV clip per voice name it should accept.

The proxy lists `VOICES_DIR` and conditions the model on each clip; the stand-in model ignores the
clip's sound and speaks with the Kokoro voice of the same name (or af_heart). The clips are written
fresh (0.5 s of silence each): the sample's own voice clips are not public.
"""

from __future__ import annotations

import wave
from pathlib import Path

from bench.sample.standins import onnx_model

SAMPLE_DEFAULT_VOICE = "ENG_US_F_KimW"  # the proxy's DEFAULT_VOICE


def write(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in (SAMPLE_DEFAULT_VOICE, *sorted(onnx_model.voice_names())):
        with wave.open(str(folder / f"{name}.wav"), "wb") as clip:
            clip.setnchannels(1)
            clip.setsampwidth(2)
            clip.setframerate(onnx_model.SAMPLE_RATE)
            clip.writeframes(b"\0\0" * (onnx_model.SAMPLE_RATE // 2))
    return folder
