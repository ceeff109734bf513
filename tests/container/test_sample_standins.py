"""bench/sample/sample_containers.py and its stand-ins: bad input is one line, the Orpheus token path carries
the audio it was given (and cuts where vLLM cuts), the load table says when a container cannot underrun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.sample import bench_sample_load
from bench.sample.standins import snac_codec, vllm_server

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "bench/sample/sample_containers.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_sample_dir_without_the_container_is_one_line_and_exit_4(tmp_path: Path) -> None:
    done = _run("--sample-dir", str(tmp_path), "--container", "kokoro-cpu")
    assert done.returncode == 4
    assert done.stderr.strip().count("\n") == 0 and "no kokoro-cpu/serve.py under" in done.stderr


def test_an_unknown_container_is_a_usage_error(tmp_path: Path) -> None:
    done = _run("--sample-dir", str(tmp_path), "--container", "nope")
    assert done.returncode == 4 and "Traceback" not in done.stderr


def test_describe_says_what_stands_in_for_each() -> None:
    for container in ("kokoro", "kokoro-cpu", "chatterbox", "vllm"):
        done = _run("--sample-dir", "/nonexistent", "--container", container, "--describe")
        assert done.returncode == 0 and "REAL:" in done.stdout and "STAND-IN:" in done.stdout


def _codes_from_tokens(text: str) -> list[int]:
    """What the vllm proxy does with the stand-in's tokens (tts_orpheus.prompt's mapping, restated)."""
    import re

    codes: list[int] = []
    for n in re.findall(r"<custom_token_(\d+)>", text):
        raw = int(n) + 128256 - 128266
        code = raw - (len(codes) % 7) * 4096
        assert 0 <= code < 4096, "a token the proxy would drop"
        codes.append(code)
    return codes


def test_orpheus_tokens_decode_back_to_the_same_audio() -> None:
    audio = np.linspace(-0.5, 0.5, 3 * snac_codec.FRAME_SAMPLES + 100, dtype=np.float32)
    uid = snac_codec.register(audio)
    frames = range(snac_codec.frame_count(audio))
    text = "".join(snac_codec.tokens_text(snac_codec.frame_codes(uid, f), 7 * f) for f in frames)
    pcm = np.frombuffer(snac_codec.decode(_codes_from_tokens(text)), dtype="<i2")
    assert len(pcm) == len(audio)
    assert np.max(np.abs(pcm / 32767 - audio)) < 1e-3
    assert snac_codec.decode([1, 2, 3, 4, 0, 0, 0]) == b""  # a frame naming no audio


def test_the_stand_in_vllm_reads_the_orpheus_prompt() -> None:
    prompt = "<custom_token_3>leo: Hello there.<|eot_id|><custom_token_4><custom_token_5><custom_token_1>"
    assert vllm_server._voice_and_text(prompt) == ("am_michael", "Hello there.")


def _summary(messages: int, gaps: int) -> dict[str, object]:
    stats = {"p50": 100.0, "p95": 200.0}
    return {"sessions_completed": 1, "sessions_failed": 0, "messages": messages, "gap_ms": {"count": gaps},
            "ttfa_ms": stats, "ttfa_audible_ms": stats, "errors": 0, "underruns": 0, "sessions_meeting_slo": 1,
            "audio_s_per_s": 1.5}


@pytest.mark.parametrize(("gaps", "frames"), [(0, 1.0), (30, 4.0)])
def test_the_load_table_shows_frames_per_message(gaps: int, frames: float) -> None:
    row = bench_sample_load.aggregate([_summary(10, gaps)])
    assert row["frames_per_message"] == frames
    table = bench_sample_load.table(("a", "b"), {"a": {1: row}, "b": {1: row}}, [1])
    assert f"0 ({frames:.1f})" in table and "1.00x" in table
