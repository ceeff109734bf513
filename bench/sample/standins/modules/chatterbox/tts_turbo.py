"""STAND-IN for `chatterbox.tts_turbo` (ChatterboxTurboTTS, Conditionals): the calls the proxy makes.

`from_local`/`from_pretrained(device=...)`, `prepare_conditionals(clip, exaggeration)` (sets
`.conds`), `generate(text)` returning a `[1, N]` float32 torch tensor at 24 kHz. The audio is this
project's int8 ONNX Kokoro-82M speaking `text` with the Kokoro voice named like the clip (else
af_heart), so its length is Kokoro's for that text and its pace Kokoro's on this CPU (real-time factor
about 0.57 on 2 cores, docs in ../shared/KOKORO_OFFLINE.md), not Chatterbox Turbo's on an A10G.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.sample.standins import onnx_model


@dataclass
class Conditionals:
    voice: str


class ChatterboxTurboTTS:
    sr = onnx_model.SAMPLE_RATE

    def __init__(self) -> None:
        self.conds: Conditionals | None = None
        onnx_model.model()

    @classmethod
    def from_local(cls, ckpt_dir: str, device: str = "cuda") -> ChatterboxTurboTTS:
        return cls()

    @classmethod
    def from_pretrained(cls, device: str = "cuda") -> ChatterboxTurboTTS:
        return cls()

    def prepare_conditionals(self, wav_fpath: str, exaggeration: float = 0.5) -> None:
        stem = Path(wav_fpath).stem
        self.conds = Conditionals(stem if stem in onnx_model.voice_names() else "af_heart")

    def generate(self, text: str, **_: Any) -> Any:
        import torch

        voice = self.conds.voice if self.conds else "af_heart"
        return torch.from_numpy(onnx_model.audio_for_text(text, voice).copy()).unsqueeze(0)
