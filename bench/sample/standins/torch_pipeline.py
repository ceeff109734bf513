"""kokoro's real KPipeline on torch, given this machine's weights and voices instead of the hub's.

GPU `serve.py` builds `KPipeline(lang_code="a", repo_id="hexgrad/Kokoro-82M")`, which downloads
`kokoro-v1_0.pth` and `voices/<name>.pt` from the hub. `install()` replaces `kokoro.KPipeline` (before
serve.py's `from kokoro import KPipeline`) with a subclass that passes a real `KModel` built from the
weights reference_container rebuilds from the int8 ONNX export (reference_container/torch_weights.py,
cached), and loads a voice name from ../shared/kokoro/voices. Everything else (G2P, splitting,
inference, on the CPU here) is kokoro 0.9.4's own code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.sample.standins import onnx_model


def _local_model() -> Any:
    from kokoro import KModel

    from reference_container import assets

    voices = onnx_model.voices_dir()
    config = assets.find_config(voices.parent if voices else None)
    if config is None:
        raise RuntimeError("no Kokoro config.json found (../shared/kokoro/config.json)")
    weights = assets.converted_torch_weights(config, None, None)
    return KModel(repo_id="hexgrad/Kokoro-82M", config=str(config), model=str(weights)).to("cpu").eval()


def install() -> None:
    import kokoro
    import torch

    real = kokoro.KPipeline
    if getattr(real, "_bench_local", False):
        return

    class LocalKPipeline(real):  # type: ignore[misc, valid-type]
        _bench_local = True
        _shared_model: Any = None

        def __init__(self, lang_code: str, repo_id: str | None = None, model: Any = True, **kwargs: Any) -> None:
            if model is True:
                if LocalKPipeline._shared_model is None:
                    LocalKPipeline._shared_model = _local_model()
                model = LocalKPipeline._shared_model
            super().__init__(lang_code, repo_id=repo_id, model=model, **kwargs)

        def load_single_voice(self, voice: str) -> Any:
            if voice in self.voices:
                return self.voices[voice]
            if voice.endswith(".pt"):  # kokoro loads a name ending in .pt as a local file: keep that
                return super().load_single_voice(voice)
            folder = onnx_model.voices_dir()
            path = folder / f"{voice}.bin" if folder and _plain_name(voice) else None
            if path is None or not path.is_file():
                # the hub answers an unknown voice with an HTTP 404 error; this is the local equivalent
                raise FileNotFoundError(f"voice {voice!r} not found in {folder}")
            pack = torch.from_numpy(np.fromfile(path, dtype="<f4").reshape(510, 1, 256).copy())
            self.voices[voice] = pack
            return pack

    kokoro.KPipeline = LocalKPipeline


def _plain_name(voice: str) -> bool:
    """A name that can only mean a file in the voices folder (no path, NUL or over-long name): anything
    else is a voice the hub does not have, not an OSError from this machine's file system."""
    return 0 < len(voice) <= 100 and "/" not in voice and "\0" not in voice and voice not in (".", "..")
