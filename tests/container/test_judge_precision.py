"""bench/judge_precision.py: precision renders judged against fp32 (duration, spectrum); fails a bad one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench import judge_precision

SR = 24_000


def _speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    pitch = 140 + 40 * np.sin(2 * np.pi * 1.3 * t)
    voiced = np.sin(2 * np.pi * np.cumsum(pitch) / SR) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2)
    return (0.3 * voiced + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


def _results(folder: Path, renders: dict[str, np.ndarray]) -> Path:
    folder.mkdir()
    (folder / "gpu_results.json").write_text(json.dumps({"precision_audio": {"rows": [
        {"mode": "fp32", "index": 0, "text": "The quick brown fox.", "seconds": 2.0}]}}))
    np.savez(folder / "precision_audio.npz", **renders)
    return folder


def test_a_close_render_passes_and_a_stretched_one_fails(tmp_path: Path, capsys) -> None:
    base = _speechlike(2.0)
    close = base + 1e-4 * np.random.default_rng(1).standard_normal(base.size).astype(np.float32)
    stretched = np.interp(np.linspace(0, base.size - 1, int(base.size * 1.1)), np.arange(base.size), base)
    good = _results(tmp_path / "good", {"fp32__0": base, "bf16__0": close})
    assert judge_precision.main([str(good), "--no-hearing"]) == 0
    bad = _results(tmp_path / "bad", {"fp32__0": base, "bf16__0": close, "tf32__0": stretched.astype(np.float32)})
    assert judge_precision.main([str(bad), "--no-hearing"]) == 1
    out = capsys.readouterr().out
    assert "tf32  FAIL duration +10.0%" in out and "bf16  ok" in out


def test_a_cpu_run_or_a_missing_file_is_one_line_and_exit_4(tmp_path: Path, capsys) -> None:
    cpu = _results(tmp_path / "cpu", {"fp32__0": _speechlike(1.0)})
    assert judge_precision.main([str(cpu), "--no-hearing"]) == 4
    assert judge_precision.main([str(tmp_path / "nowhere")]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("judge_precision: only fp32") and err[1].endswith("gpu_results.json not found")
