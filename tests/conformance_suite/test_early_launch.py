"""The suite launches a process target while the tests before the first case run (the property tests
of `pytest conformance`), and still reports a failed start on the first case, in seconds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROPERTY = "test_encode_then_decode_round_trip"


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider",
                           "--target", "process", *args],
                          cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, capture_output=True,
                          text=True, timeout=240, check=False)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_target_loads_while_the_property_tests_run(tmp_path: Path) -> None:
    run = _pytest("-k", f"{PROPERTY} or health.ping.loading.1 or health.ping.1",
                  "--conformance-report", str(tmp_path / "r.json"))
    out = run.stdout
    assert run.returncode == 0, out[-3000:]
    assert "3 passed" in out, out[-3000:]
    launched = out.index("launched ahead of the first case")
    assert out.index("test_sse_properties.py") < launched < out.index("ready after"), out[-3000:]
    assert re.search(r"health\.ping\.loading\.1 +OK", out), out[-3000:]  # the loading window was watched


@pytest.mark.timeout(120)
def test_a_failed_launch_fails_the_cases_that_need_it_and_nothing_hangs(tmp_path: Path) -> None:
    log = tmp_path / "no-such-folder" / "container.log"  # the launch cannot open the container's log
    run = _pytest("-k", f"{PROPERTY} or health.ping.1 or frames.binary.1", "--container-log", str(log),
                  "--conformance-report", str(tmp_path / "r.json"))
    assert run.returncode == 1, run.stdout[-3000:]
    assert "1 passed" in run.stdout and "2 failed" in run.stdout, run.stdout[-3000:]
    assert run.stdout.count(f"the process target did not start: [Errno 2] No such file or directory: '{log}'") >= 2
