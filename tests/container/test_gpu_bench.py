"""bench/gpu_bench.py's CPU smoke mode: the GPU benchmark script runs end to end on the real weights and
reports both paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reference_container import assets

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_gpu_bench_quick_on_cpu(tmp_path: Path) -> None:
    if assets.find_config(None) is None:
        pytest.skip("no Kokoro config.json on this machine (../shared/kokoro or /opt/kokoro)")
    out = tmp_path / "gpu.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_bench.py"), "--device", "cpu", "--quick",
                          "--seconds", "1", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                         timeout=500)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(out.read_text())
    for path in ("plain", "batched"):
        rows = report["paths"][path]["concurrency"]
        assert [r["sessions"] for r in rows] == [1, 2]
        assert all(r["audio_per_wall_s"] > 0 and r["units"] >= 1 for r in rows)
        assert len(report["paths"][path]["ttfa_alone_ms"]) >= 2
    # The real weights, rebuilt from the int8 ONNX model (no fp32 checkpoint on this machine).
    assert report["weights"] == "real"
    assert report["paths"]["plain"]["converted_weights"] and report["paths"]["batched"]["converted_weights"]
    assert report["paths"]["batched"]["batch_sizes_mean"] >= 1
    assert report["paths"]["plain"]["batch_sizes_mean"] is None


def test_gpu_bench_without_cuda_says_so_in_one_line() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_bench.py")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip() == "gpu_bench: no CUDA device (use --device cpu for a smoke run)"


def test_gpu_bench_names_a_missing_weights_folder_in_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_bench.py"), "--device", "cpu",
                          "--weights-dir", str(tmp_path / "nope")], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip() == f"gpu_bench: --weights-dir {tmp_path / 'nope'} is not a folder"
