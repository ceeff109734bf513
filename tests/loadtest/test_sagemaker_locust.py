"""The locustfile end to end through the SageMaker stand-in, and every bad setup a stranger tries.

Each run is a real ``locust -f loadtest/locustfile.py --headless`` process against the toy
container (``tests/toys/good.py``), directly or through ``bidi_tts.gateway``; each asserts that the
run ends by itself in a bounded time, writes its summary once, and names every failed session's
cause once in the log and in the summary.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bidi_tts.gateway import Faults, GatewayThread
from bidi_tts.local_container import free_port
from tests.loadtest.servers import ROOT, locust_cmd
from tests.sagemaker.helpers import start_gateway
from tests.toys.good import ServerThread, ToyContainer

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]
EXIT_BOUND_S = 25.0  # start-up, the last turn, plots and exit on a loaded 2-core machine


@dataclass
class Run:
    code: int
    summary: dict
    log: str
    wall_s: float


def _env(credentials: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
               AWS_EC2_METADATA_DISABLED="true")
    if credentials:
        env.update(AWS_ACCESS_KEY_ID="AKIDEXAMPLETESTONLY", AWS_SECRET_ACCESS_KEY="test-secret-not-real")
    return env


def run_locust(tmp: Path, *target: str, run_time: float = 4, credentials: bool = True, users: int = 2,
               extra: tuple[str, ...] = ()) -> Run:
    out = tmp / "summary.json"
    started = time.monotonic()
    proc = subprocess.run(
        locust_cmd("--headless", "-u", str(users), "-r", str(users), "--run-time", f"{run_time:g}s",
                   "--summary-json", str(out), "--tokens-per-second", "200", "--turn-pause-s", "0.1",
                   "--only-summary", *target, *extra),
        cwd=ROOT, capture_output=True, text=True, timeout=run_time + EXIT_BOUND_S + 30, env=_env(credentials))
    wall = time.monotonic() - started
    summary = json.loads(out.read_text()) if out.exists() else {}
    return Run(proc.returncode, summary, proc.stdout + proc.stderr, wall)


@pytest.fixture(scope="module")
def container() -> Iterator[ServerThread]:
    with ServerThread(ToyContainer().app()) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(container: ServerThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayThread]:
    with start_gateway(container.url, tmp_path_factory.mktemp("certs")) as gw:
        yield gw


def sagemaker(gw: GatewayThread) -> tuple[str, ...]:
    return ("--endpoint-name", "toy-endpoint", "--endpoint-url", gw.url, "--endpoint-ca", gw.ca_file)


def assert_no_traceback(run: Run) -> None:
    """No traceback through the project's code and no flood. awscrt's own write-completion callback
    can race a cancelled write on a loaded machine and print one InvalidStateError from its native
    thread (it checks ``future.cancelled()`` then sets the result); that is tolerated, once."""
    ours = [line for line in run.log.splitlines() if line.lstrip().startswith("File ")
            and ("/loadtest/" in line or "/bidi_tts/" in line)]
    assert not ours, run.log[-3000:]
    assert "Task exception was never retrieved" not in run.log, run.log[-3000:]
    assert run.log.count("Traceback") <= 1, run.log[-3000:]


def test_sagemaker_run_ends_by_itself_with_one_correct_summary(gateway: GatewayThread, tmp_path: Path) -> None:
    run = run_locust(tmp_path, *sagemaker(gateway), run_time=5,
                     extra=("--slo-ttfa-p95-ms", "5000", "--report-dir", str(tmp_path / "report")))
    assert run.code == 0, run.log[-3000:]
    assert run.wall_s < 5 + EXIT_BOUND_S, run.wall_s
    assert run.log.count("bidi-tts: ") - run.log.count("bidi-tts: %") >= 1
    assert len([line for line in run.log.splitlines() if " sessions (" in line and "completed" in line]) == 1
    s = run.summary
    assert s["sessions_completed"] >= 1 and s["messages"] >= 5 and s["errors"] == 0 and s["failures"] == {}
    assert s["sessions"] == s["sessions_completed"] + s["sessions_failed"] + s["sessions_cut"]
    assert s["ttfa_ms"]["p50"] is not None and s["slo_passed"]
    assert_no_traceback(run)


def test_without_credentials_the_run_stops_at_once_naming_the_cause(gateway: GatewayThread, tmp_path: Path) -> None:
    run = run_locust(tmp_path, *sagemaker(gateway), run_time=60, credentials=False)
    assert run.code == 69  # docs/exit-codes.md: the target cannot be used
    assert run.wall_s < 20, run.wall_s  # not the 60 s run time, nor 30 s per session
    assert run.summary["failures"].keys() == {"credentials"} and run.summary["sessions_failed"] >= 1
    assert run.summary["errors"] >= 1
    assert run.log.count("session failed (credentials)") == 1
    assert "no AWS credentials" in run.log
    assert_no_traceback(run)


def test_refused_sessions_are_counted_and_logged_once(tmp_path: Path) -> None:
    with start_gateway(f"http://127.0.0.1:{free_port()}", tmp_path / "certs") as gw:
        run = run_locust(tmp_path, *sagemaker(gw), run_time=5, extra=("--slo-ttfa-p95-ms", "5000"))
    assert run.code != 0
    s = run.summary
    assert s["failures"] == {"refused": s["sessions_failed"]} and s["sessions_failed"] >= 2
    assert run.log.count("session failed (refused)") == 1
    assert any("no message was measured" in b and "refused" in b for b in s["slo_broken"]), s["slo_broken"]
    assert_no_traceback(run)


def test_stream_errors_break_the_gate_even_without_an_error_rate_limit(container: ServerThread,
                                                                         tmp_path: Path) -> None:
    with start_gateway(container.url, tmp_path / "certs", Faults(fail_after=4)) as gw:
        run = run_locust(tmp_path, *sagemaker(gw), run_time=6, extra=("--slo-ttfa-p95-ms", "5000"))
    s = run.summary
    assert s["failures"].get("stream error", 0) >= 1, (s, run.log[-2000:])
    assert run.code != 0 and not s["slo_passed"]
    assert any("sessions failed" in b for b in s["slo_broken"]), s["slo_broken"]
    assert run.log.count("session failed (stream error)") == 1
    assert_no_traceback(run)


@pytest.mark.parametrize(("target", "message"), [
    (("--host", "127.0.0.1:8080"), "write it with its scheme, e.g. http://127.0.0.1:8080"),
    ((), "give a container URL (--host http://HOST:PORT) or --endpoint-name"),
    (("--endpoint-name", "x", "--region", "mars"), "--region 'mars' is not an AWS region name"),
    (("--endpoint-name", "x", "--endpoint-url", "http://127.0.0.1:1"), "must be an https:// URL"),
    (("--endpoint-name", "x", "--endpoint-ca", "/nonexistent/ca.pem"), "no such file"),
])
def test_bad_targets_are_one_line_before_the_run(tmp_path: Path, target: tuple[str, ...], message: str) -> None:
    run = run_locust(tmp_path, *target, run_time=30)
    assert run.code == 4 and run.wall_s < 15  # docs/exit-codes.md: a usage error
    errors = [line for line in run.log.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], run.log[-2000:]
    assert run.summary == {}
    assert_no_traceback(run)


@pytest.mark.parametrize("target", ["host", "endpoint-url"])
def test_nothing_listening_stops_the_run_in_seconds_with_one_line(tmp_path: Path, target: str) -> None:
    port = free_port()
    args = (("--host", f"http://127.0.0.1:{port}") if target == "host" else
            ("--endpoint-name", "x", "--region", "us-east-1", "--endpoint-url", f"https://127.0.0.1:{port}"))
    run = run_locust(tmp_path, *args, run_time=60)
    assert run.code == 69 and run.wall_s < 15, (run.code, run.wall_s)  # not the 60 s run time
    errors = [line for line in run.log.splitlines() if line.startswith("error:")]
    assert errors == [f"error: nothing listens at 127.0.0.1:{port} (connection refused; from "
                      f"{args[-1]})"], run.log[-2000:]
    assert run.summary == {} and "Traceback" not in run.log


def test_bad_option_values_are_one_line(tmp_path: Path) -> None:
    run = run_locust(tmp_path, "--host", "http://127.0.0.1:1", extra=("--tokens-per-second", "0"))
    assert run.code != 0 and "--tokens-per-second: 0 must be a positive number" in run.log
    assert_no_traceback(run)


def test_sigterm_mid_run_writes_one_summary_counting_cut_sessions(gateway: GatewayThread, tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    proc = subprocess.Popen(
        locust_cmd("--headless", "-u", "2", "-r", "2", "--run-time", "60s", "--summary-json", str(out),
                   "--tokens-per-second", "20", "--only-summary", *sagemaker(gateway)),
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(True))
    time.sleep(6)  # mid-turn: 20 tokens/s keeps every session busy for seconds
    stopped = time.monotonic()
    proc.terminate()
    log, _ = proc.communicate(timeout=30)
    assert time.monotonic() - stopped < 15
    assert len([line for line in log.splitlines() if " sessions (" in line and "completed" in line]) == 1, log
    summary = json.loads(out.read_text())
    assert summary["sessions_cut"] >= 1 and summary["failures"] == {}
    assert summary["sessions"] == summary["sessions_completed"] + summary["sessions_cut"]
    assert "Traceback" not in log
