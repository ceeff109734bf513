"""The GPU bundle (bench/gpu_bundle.py): small enough for one call, and it runs where the project is not installed.

The fast tests cover its parts, each with a broken counterpart: the model pack round trip (a damaged
pack is refused), the weights checksum (one changed value fails it), the duration check (6% off
fails it), the ALBERT stand-in (same keys and outputs as transformers'; gelu instead of gelu_new is
caught) and the vendored kokoro (no import the GPU machine lacks). The slow proof builds the real
bundle, checks its size, and runs ``run.sh --device cpu --quick`` in a fresh Python 3.12 venv with only
torch, numpy and onnx, from a folder outside the checkout; then once more with a damaged checksum.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench import gpu_bundle, gpu_bundle_pack, gpu_bundle_run
from reference_container import assets

ROOT = Path(__file__).resolve().parents[2]


def _tiny_onnx(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    weights = numpy_helper.from_array(rng.integers(-20, 20, 9000).astype(np.int8), "w_quantized")
    floats = numpy_helper.from_array(rng.normal(size=3000).astype(np.float32), "b")
    small = numpy_helper.from_array(np.array([0.5], dtype=np.float32), "w_scale")
    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                              initializer=[weights, floats, small])
    onnx.save(helper.make_model(graph), str(path))


def test_pack_rebuilds_the_model_byte_for_byte_and_refuses_a_damaged_pack(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    _tiny_onnx(model)
    meta = gpu_bundle_pack.pack(model, tmp_path / "m.pack")
    assert [s["kind"] for s in meta["segments"]] == ["bytes", "f32"]  # the 4-byte scale stays in the skeleton
    rebuilt = gpu_bundle_pack.unpack(tmp_path / "m.pack", meta, tmp_path / "out.onnx")
    assert rebuilt.read_bytes() == model.read_bytes()

    damaged = bytearray((tmp_path / "m.pack").read_bytes())
    damaged[meta["skeleton"]["coded"] + 40] ^= 0xFF  # inside the int8 segment
    (tmp_path / "m.pack").write_bytes(bytes(damaged))
    with pytest.raises(gpu_bundle_pack.PackError):
        gpu_bundle_pack.unpack(tmp_path / "m.pack", meta, tmp_path / "bad.onnx")
    assert not (tmp_path / "bad.onnx").exists()
    meta = gpu_bundle_pack.pack(model, tmp_path / "m.pack")
    with pytest.raises(gpu_bundle_pack.PackError, match="expected"):  # intact pack, other model's digest
        gpu_bundle_pack.unpack(tmp_path / "m.pack", meta | {"sha256": "0" * 64}, tmp_path / "bad.onnx")


def test_weights_checksum_fails_on_one_changed_value() -> None:
    state = {"a.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "b.bias": np.ones(2, dtype=np.float32)}
    want = gpu_bundle_pack.state_sha256(state)
    assert gpu_bundle_run.verify_state(dict(state), want) == want
    changed = dict(state, **{"b.bias": np.array([1.0, np.nextafter(np.float32(1), np.float32(2))], np.float32)})
    with pytest.raises(gpu_bundle_run.CheckFailed, match="differ from the bundle's"):
        gpu_bundle_run.verify_state(changed, want)
    renamed = {"a.weight": state["a.weight"], "c.bias": state["b.bias"]}
    with pytest.raises(gpu_bundle_run.CheckFailed):
        gpu_bundle_run.verify_state(renamed, want)


class _Bundle:
    """What check_duration reads of a bundle: the check sentence and a style row."""

    def __init__(self, onnx_s: float) -> None:
        self.manifest = {"check": {"text": "t", "phonemes": "abc", "voice": "v", "onnx_duration_s": onnx_s}}

    def style(self, voice: str, phonemes: str) -> Any:
        import torch

        return torch.zeros(1, 256)


def _model_speaking(seconds: float, value: float = 0.1) -> Any:
    import torch

    return lambda phonemes, style, speed: torch.full((round(seconds * 24_000),), value)


def test_duration_check_passes_within_five_percent_and_fails_beyond() -> None:
    assert gpu_bundle_run.check_duration(_model_speaking(4.15), _Bundle(4.0))["ratio"] == pytest.approx(1.0375)
    with pytest.raises(gpu_bundle_run.CheckFailed, match=r"4\.240 s, the ONNX route 4\.000 s \(\+6\.0%"):
        gpu_bundle_run.check_duration(_model_speaking(4.24), _Bundle(4.0))
    with pytest.raises(gpu_bundle_run.CheckFailed, match="not speech-like"):
        gpu_bundle_run.check_duration(_model_speaking(4.0, value=0.0), _Bundle(4.0))
    with pytest.raises(gpu_bundle_run.CheckFailed, match="not speech-like"):
        gpu_bundle_run.check_duration(_model_speaking(4.0, value=float("nan")), _Bundle(4.0))


def test_batch_size_mean_leaves_out_the_warm_up_batch_only_when_one_was_made() -> None:
    # --quick makes no warm-up call: its one batch is the measurement (the old [1:] dropped it: None)
    assert gpu_bundle_run.batch_size_mean([2], warmed=False) == 2
    assert gpu_bundle_run.batch_size_mean([1, 4, 2], warmed=False) == pytest.approx(7 / 3)
    assert gpu_bundle_run.batch_size_mean([1, 4, 2], warmed=True) == 3  # the warm-up's batch of one is out
    assert gpu_bundle_run.batch_size_mean([1], warmed=True) is None
    assert gpu_bundle_run.batch_size_mean([], warmed=False) is None


def _albert_pair() -> tuple[Any, Any]:
    import torch
    from kokoro.modules import CustomAlbert
    from transformers import AlbertConfig

    from bench import gpu_bundle_albert as shim

    # Kokoro's plbert shape, smaller (768 wide, 12 heads, 2048 inner, 12 layers there): the same code paths.
    plbert: dict[str, Any] = {"hidden_size": 96, "num_attention_heads": 4, "intermediate_size": 192,
                              "max_position_embeddings": 512, "num_hidden_layers": 4, "dropout": 0.1}
    torch.manual_seed(0)
    real = CustomAlbert(AlbertConfig(vocab_size=178, **plbert)).eval()
    with torch.no_grad():  # trained-size activations (init's are tiny): where gelu and gelu_new part ways
        real.encoder.albert_layer_groups[0].albert_layers[0].ffn.weight.mul_(30)
    mine = shim.AlbertModel(shim.AlbertConfig(vocab_size=178, **plbert)).eval()
    real_state, mine_state = real.state_dict(), mine.state_dict()
    assert {k: tuple(v.shape) for k, v in real_state.items()} == {k: tuple(v.shape) for k, v in mine_state.items()}
    mine.load_state_dict(real_state, strict=True)
    return real, mine


def test_albert_stand_in_matches_transformers_and_catches_a_wrong_activation(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from bench import gpu_bundle_albert as shim

    real, mine = _albert_pair()
    ids = torch.randint(1, 178, (2, 40))
    mask = torch.ones(2, 40, dtype=torch.int)
    mask[1, 25:] = 0  # a padded row, as torch_batch sends
    with torch.inference_mode():
        want = real(ids, attention_mask=mask)
        got = mine(ids, attention_mask=mask).last_hidden_state
        assert float((want[1, :25] - got[1, :25]).abs().max()) < 1e-5
        assert float((want[0] - got[0]).abs().max()) < 1e-5
        assert float((real(ids[:1], attention_mask=mask[:1]) - mine(ids[:1], mask[:1]).last_hidden_state)
                     .abs().max()) < 1e-5
        monkeypatch.setattr(shim, "gelu_new", torch.nn.functional.gelu)  # exact gelu: not ALBERT's
        assert float((want[0] - mine(ids, attention_mask=mask).last_hidden_state[0]).abs().max()) > 1e-4
        monkeypatch.undo()
        no_mask = mine(ids, attention_mask=torch.ones_like(mask)).last_hidden_state  # padding attended to
        assert float((want[1, :25] - no_mask[1, :25]).abs().max()) > 1e-4


def test_vendored_kokoro_imports_nothing_the_gpu_machine_lacks(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("kokoro")
    gpu_bundle.vendor_kokoro(tmp_path / "kokoro")
    for path in (tmp_path / "kokoro").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        for banned in ("transformers", "huggingface_hub", "loguru", "from attr", "misaki", "pipeline"):
            assert f"import {banned}" not in text and f"from {banned}" not in text, (path.name, banned)
    assert "Apache License" in (tmp_path / "kokoro" / "LICENSE").read_text(encoding="utf-8")

    changed = tmp_path / "changed" / "kokoro"  # a kokoro whose model.py no longer has the expected import
    shutil.copytree(gpu_bundle._kokoro_dir(), changed, ignore=shutil.ignore_patterns("__pycache__"))
    model_py = changed / "model.py"
    model_py.write_text(model_py.read_text(encoding="utf-8").replace("from loguru import logger", "import loguru"))
    monkeypatch.setattr(gpu_bundle, "_kokoro_dir", lambda: changed)
    with pytest.raises(gpu_bundle.BundleError, match=r"kokoro/model\.py: expected line"):
        gpu_bundle.vendor_kokoro(tmp_path / "again")


# --- the proof: the real bundle, a fresh venv, a folder outside the checkout ---------------------------------

def _kokoro_dir() -> Path | None:
    for folder in (None, ROOT.parents[1] / "shared" / "kokoro"):
        if (config := assets.find_config(folder)) is not None and (config.parent / "voices").is_dir():
            return config.parent
    return None


def _uv() -> list[str] | None:
    if (uv := shutil.which("uv")) is not None:
        return [uv]
    for py in (sys.executable, "python3"):
        if subprocess.run([py, "-m", "uv", "--version"], capture_output=True, timeout=30).returncode == 0:
            return [py, "-m", "uv"]
    return None


def _python312(uv: list[str], cwd: Path) -> str | None:
    """As ./run finds it: UV_PYTHON, uv's own discovery, then pyenv's 3.12."""
    if os.environ.get("UV_PYTHON"):
        return os.environ["UV_PYTHON"]
    found = subprocess.run([*uv, "python", "find", "--no-python-downloads", ">=3.12,<3.13"], cwd=cwd,
                           capture_output=True, text=True, timeout=60)
    if found.returncode == 0 and found.stdout.strip():
        return found.stdout.strip()
    if shutil.which("pyenv"):
        versions = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True, timeout=30)
        bare = sorted((v for v in versions.stdout.split() if v.startswith("3.12")),
                      key=lambda v: [int(x) for x in v.split(".")])
        if bare:
            prefix = subprocess.run(["pyenv", "prefix", bare[-1]], capture_output=True, text=True, timeout=30)
            return prefix.stdout.strip() + "/bin/python3.12"
    return None


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    where = tmp_path_factory.mktemp("gpu-venv")
    uv = _uv()
    if uv is None:
        pytest.skip("no uv here (on PATH or as a Python module)")
    python = _python312(uv, where)
    if python is None:
        pytest.skip("no Python 3.12 for uv here (UV_PYTHON, uv python find, pyenv)")
    venv = where / "venv"
    env = _clean_env()
    subprocess.run([*uv, "venv", "-q", "--python", python, str(venv)], cwd=where, env=env, check=True, timeout=120)
    pins = [f"{name}=={metadata.version(name).split('+')[0]}" for name in ("torch", "numpy", "onnx")]
    subprocess.run([*uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *pins], cwd=where,
                   env=env, check=True, timeout=300)  # uv's cache holds them: hardlinked, seconds
    return str(venv / "bin" / "python")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kokoro_dir = _kokoro_dir()
    if kokoro_dir is None:
        pytest.skip("no Kokoro config.json and voices on this machine (../shared/kokoro or /opt/kokoro)")
    pytest.importorskip("onnxruntime")
    out = tmp_path_factory.mktemp("gpu-bundle") / "bundle"
    gpu_bundle.build(out, kokoro_dir, log=lambda _line: None)
    return out


def _clean_env() -> dict[str, str]:
    """This environment without what would put the project (or its venv) on the path."""
    return {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "OUT")}


def _run(python: str, bundle: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(bundle / "run.sh"), *args], cwd=cwd, capture_output=True, text=True,
                          env=_clean_env() | {"PYTHON": python, "OUT": str(cwd / "out")}, timeout=600)


@pytest.mark.slow
def test_bundle_fits_one_call_and_runs_quick_in_a_fresh_venv(bundle: Path, fresh_python: str,
                                                             tmp_path: Path) -> None:
    total = gpu_bundle.bundle_bytes(bundle) + gpu_bundle.tracked_bytes()
    assert total < gpu_bundle.CALL_LIMIT, total
    assert not (ROOT in bundle.parents or ROOT in tmp_path.parents)
    lonely = subprocess.run([fresh_python, "-c", "import reference_container"], cwd=tmp_path, env=_clean_env(),
                            capture_output=True, text=True, timeout=60)
    assert lonely.returncode != 0  # the project is not installed there
    every_step = ",".join(gpu_bundle_run.DEFAULT_STEPS + gpu_bundle_run.LEGACY_STEPS)
    run = _run(fresh_python, bundle, tmp_path, "--device", "cpu", "--quick", "--steps", every_step)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "gpu_results.json").read_text())
    # the batched route and the serving loop, as the container runs them
    equal = report["batched_equal"]
    assert equal["same_lengths"] and len(set(equal["frames"])) == 2
    assert all(r["max_err_of_peak"] < 0.05 for r in equal["rows"])  # float32: phase drift, not a leak
    assert [r["mode"] for r in report["precision_audio"]["rows"]] == ["fp32"]  # the CPU runs fp32 only
    assert (tmp_path / "out" / "precision_audio.npz").stat().st_size > 1000
    assert report["batch1_batched"]["fp32"][0]["median_ms"] > 0
    assert [r["batch"] for r in report["batched_throughput"]] == [1, 2]
    assert [r["sessions"] for r in report["serving"]] == [1, 2]
    assert all(r["messages"] >= 1 and r["audio_per_wall_s"] > 0 and r["passes"] >= 1 for r in report["serving"])
    # the first run's steps (KModel's own call, threads, the old Batcher)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert report["errors"] == {}
    assert report["rebuild"]["state_sha256"] == manifest["weights"]["state_sha256"]
    assert report["rebuild"]["tensors"] == 688
    assert abs(report["check"]["ratio"] - 1) <= 0.05 and report["check"]["rms"] > 1e-3
    assert report["ttfa_batch1"]["eager_fp32"][0]["median_ms"] > 0
    for path in ("plain", "batched"):
        rows = report["concurrency"][path]
        assert [r["sessions"] for r in rows] == [1, 2]
        assert all(r["calls"] >= 1 and r["audio_per_wall_s"] > 0 for r in rows)
    assert all(r["batch_size_mean"] >= 1 for r in report["concurrency"]["batched"])
    assert [r["k"] for r in report["batch_passes"]["rows"]] == [1, 2]
    assert report["cost_split"]["stage_ms_per_call"]["decoder"] > 0
    assert report["cost_split"]["wall_ms_per_call"] > 0
    assert (tmp_path / "out" / "run.log").read_text().count("rebuild: 688 tensors") == 1

    from bench import gpu_profile  # the real output's shape converts (a CPU run: never shipped)

    profile = gpu_profile.profile_from(report, "gpu_results.json", name="cpu-smoke", g2p_from="h200-eager",
                                       allow_cpu=True)
    first = report["ttfa_batch1"]["eager_fp32"][0]["median_ms"]
    assert profile["call_ms_by_tokens"][0][1] == pytest.approx(first, abs=1e-3)  # rounded to 3 places
    assert set(profile["throughput_by_concurrency"]) == {"1", "2"} and profile["throughput_by_concurrency"]["1"] == 1


@pytest.mark.slow
def test_bundle_with_a_wrong_checksum_stops_with_one_line(bundle: Path, fresh_python: str, tmp_path: Path) -> None:
    broken = tmp_path / "bundle"
    shutil.copytree(bundle, broken)
    manifest = json.loads((broken / "manifest.json").read_text())
    manifest["weights"]["state_sha256"] = "f" * 64  # weights other than the ones built here
    (broken / "manifest.json").write_text(json.dumps(manifest))
    run = _run(fresh_python, broken, tmp_path, "--device", "cpu", "--quick")
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"run.sh: rebuilt weights sha256 {manifest_sha(bundle)[:16]}... differ from the bundle's {'f' * 16}..."]
    assert "ttfa_batch1" not in json.loads((tmp_path / "out" / "gpu_results.json").read_text())


def manifest_sha(bundle: Path) -> str:
    return str(json.loads((bundle / "manifest.json").read_text())["weights"]["state_sha256"])


# --- results -> profile (bench/gpu_profile.py) -----------------------------------------------------------------

def _results(device: str = "cuda", quick: bool = False) -> dict[str, Any]:
    """The shape run.sh writes (see the proof test), with round numbers."""
    def row(tokens: int, ms: list[float], audio_s: float) -> dict[str, Any]:
        return {"tokens": tokens, "chars": tokens, "audio_s": audio_s, "ms": ms, "median_ms": sorted(ms)[1]}

    return {"device": device, "quick": quick, "gpu": "NVIDIA H200", "torch": "2.11",
            "started_at": "2026-12-02T12:00:00Z", "bundle": {"commit": "abc1234"},
            "ttfa_batch1": {"eager_fp32": [row(10, [39, 40, 41], 0.8), row(60, [59, 60, 61], 3.3),
                                           row(110, [79, 80, 81], 5.8)]},
            "concurrency": {"plain": [{"sessions": 1, "audio_per_wall_s": 50.0},
                                      {"sessions": 4, "audio_per_wall_s": 75.0}], "batched": []},
            "batch_passes": {"shared_fraction": 0.62}}


def test_profile_from_a_gpu_run_fits_calls_audio_curve_and_batch_share() -> None:
    from bench import gpu_profile

    profile = gpu_profile.profile_from(_results(), "r.json", name="h200-measured", g2p_from="h200-eager")
    assert profile["call_fixed_ms"] == pytest.approx(36.0) and profile["call_per_token_ms"] == pytest.approx(0.4)
    assert profile["call_ms_by_tokens"] == [[10.0, 40.0], [60.0, 60.0], [110.0, 80.0]]
    assert profile["audio_s_per_token"] == pytest.approx(0.05) and profile["audio_s_per_call"] == pytest.approx(0.3)
    assert profile["throughput_by_concurrency"] == {"1": 1.0, "4": 1.5}
    assert profile["batch_shared_fraction"] == 0.62
    assert profile["call_cv"] == pytest.approx(statistics_cv([39, 40, 41], [59, 60, 61], [79, 80, 81]), abs=1e-4)
    assert profile["g2p_fixed_ms"] == 10.0 and "G2P fields from h200-eager" in profile["source"]
    assert "r.json, run 2026-12-02T12:00:00Z on NVIDIA H200" in profile["source"]


def statistics_cv(*samples: list[float]) -> float:
    import statistics

    return statistics.fmean(statistics.pstdev(s) / statistics.fmean(s) for s in samples)


def test_profile_refuses_a_cpu_or_quick_run_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import gpu_profile

    for results in (_results(device="cpu"), _results(quick=True)):
        with pytest.raises(gpu_profile.ResultsError, match="not a GPU measurement"):
            gpu_profile.profile_from(results, "r.json", name="x", g2p_from="h200-eager")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_results(device="cpu")))
    assert gpu_profile.main([str(path), "--out", str(tmp_path / "p.json")]) == 4
    assert capsys.readouterr().err.strip().splitlines() == [
        "gpu_profile: r.json is a cpu run, not a GPU measurement (--allow-cpu to convert it anyway)"]
    assert not (tmp_path / "p.json").exists()


# --- wrong input: one line on stderr, a non-zero exit, before any work -------------------------------------------

def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


def test_bundle_command_refuses_no_folder_a_full_one_and_an_unwritable_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        gpu_bundle.main([])
    assert exited.value.code == 4 and "out_dir" in _one_line(capsys)
    full = tmp_path / "full"
    full.mkdir()
    (full / "old.json").write_text("{}")
    assert gpu_bundle.main([str(full)]) == 4
    assert _one_line(capsys) == f"gpu_bundle: {full} exists and is not empty"
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert gpu_bundle.main([str(blocked / "bundle")]) == 4  # a folder under a file: not writable, also as root
    assert _one_line(capsys) == f"gpu_bundle: cannot write {blocked / 'bundle'}: Not a directory"
    assert gpu_bundle.main([str(blocked)]) == 4
    assert _one_line(capsys) == f"gpu_bundle: {blocked} exists and is not a folder"


def test_run_refuses_an_unknown_device_and_an_unwritable_out(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert gpu_bundle_run.main(["--device", "tpu"]) == 4
    assert _one_line(capsys).startswith("run.sh: error: argument --device: invalid choice: 'tpu'")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert gpu_bundle_run.main(["--device", "cpu", "--out", str(blocked / "out")]) == 4
    assert _one_line(capsys) == f"run.sh: cannot write {blocked / 'out'}: Not a directory"


def test_profile_refuses_a_missing_results_file_in_one_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from bench import gpu_profile

    missing = tmp_path / "nowhere.json"
    assert gpu_profile.main([str(missing), "--out", str(tmp_path / "p.json")]) == 4
    assert _one_line(capsys) == f"gpu_profile: cannot read {missing}: No such file or directory"
    with pytest.raises(SystemExit) as exited:
        gpu_profile.main([])
    assert exited.value.code == 4 and "results" in _one_line(capsys)
