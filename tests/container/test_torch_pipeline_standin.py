"""bench/sample/standins/torch_pipeline.py: the GPU serve.py's KPipeline loads voices as kokoro does,
from this machine's folder instead of the hub: a plain name from the folder, a name ending in .pt as a
local file (kokoro's own rule), anything else FileNotFoundError (the hub's 404), never an OSError from
the file system for a name no hub holds."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("kokoro")
torch = pytest.importorskip("torch")

from bench.sample.standins import onnx_model, torch_pipeline  # noqa: E402


def _pipeline() -> object:
    import kokoro

    torch_pipeline.install()
    pipeline = object.__new__(kokoro.KPipeline)  # no model, no G2P: only the voice loading is judged
    pipeline.voices = {}
    return pipeline


@pytest.mark.skipif(onnx_model.voices_dir() is None, reason="no Kokoro voices folder on this machine")
def test_a_voice_from_the_folder_loads() -> None:
    pipeline = _pipeline()
    assert tuple(pipeline.load_single_voice("af_heart").shape) == (510, 1, 256)  # type: ignore[attr-defined]


def test_a_name_ending_in_pt_is_a_local_file_as_in_kokoro(tmp_path: Path) -> None:
    path = tmp_path / "mine.pt"
    torch.save(torch.ones(510, 1, 256), path)
    assert float(_pipeline().load_single_voice(str(path)).sum()) == 510 * 256  # type: ignore[attr-defined]


@pytest.mark.parametrize("voice", ["zz_nobody", "AF_HEART" * 40, "af_heart\0", "../voices/af_heart", ".."])
def test_a_voice_the_hub_lacks_is_file_not_found(voice: str) -> None:
    with pytest.raises(FileNotFoundError):
        _pipeline().load_single_voice(voice)  # type: ignore[attr-defined]
