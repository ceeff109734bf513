"""The load test counts wrapped samples (TTS-AUDIO) in every message's audio: `wrapped_samples` in the
summary, many on a toy that converts loud audio without clipping, none on the same audio clipped."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.loadtest.servers import ROOT, locust_cmd
from tests.toys.good import ServerThread
from tests.toys.wrapping import ClippingToy, WrappingToy

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


def _summary(url: str, tmp: Path) -> dict:
    out = tmp / "summary.json"
    proc = subprocess.run(
        locust_cmd("--headless", "-u", "1", "-r", "1", "--run-time", "4s", "--host", url, "--summary-json", str(out),
                   "--tokens-per-second", "120", "--turn-pause-s", "0.1", "--only-summary"),
        cwd=ROOT, capture_output=True, text=True, timeout=90)
    assert out.exists(), proc.stderr[-3000:]
    return dict(json.loads(out.read_text()))


def test_wrapped_samples_are_counted(tmp_path: Path) -> None:
    with ServerThread(WrappingToy().app()) as server:
        wrapped = _summary(server.url, tmp_path)
    with ServerThread(ClippingToy().app()) as server:
        clipped = _summary(server.url, tmp_path)
    assert wrapped["messages"] >= 1 and wrapped["wrapped_samples"] >= 2 * wrapped["messages"], wrapped
    assert clipped["messages"] >= 1 and clipped["wrapped_samples"] == 0, clipped
    assert "find_wraps" in wrapped["definitions"]["wrapped_samples"]
