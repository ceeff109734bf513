"""The suite as a stranger installs it: the project's wheel, `pip install 'WHEEL[conformance]'` into a
fresh virtual environment outside the repository (no ../shared, no conftest.py), then one command.

Builds the wheel with pip (hatchling from PyPI, as a user's pip would), so it needs PyPI or a warm
pip cache; about 40 s here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.toys.broken import NoCompleteToy
from tests.toys.good import ServerThread, ToyContainer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _base_python() -> str:
    return getattr(sys, "_base_executable", sys.executable)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("installed-suite")
    assert not where.is_relative_to(ROOT)
    subprocess.run([_base_python(), "-m", "venv", str(where / "venv")], check=True, timeout=120)
    pip = [str(where / "venv" / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(where / "dist"), str(ROOT)], check=True, timeout=300)
    (wheel,) = (where / "dist").glob("bidi_tts-*.whl")
    subprocess.run([*pip, "install", f"{wheel}[conformance,loadtest]"], check=True, timeout=300)
    return where / "venv"


def _clean_env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "UV_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_installed(venv: Path, cwd: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "bidi-tts-conformance"), *args], cwd=cwd, env=_clean_env(venv),
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def good_url() -> Iterator[str]:
    with ServerThread(ToyContainer().app()) as server:
        yield server.url


def test_the_wheel_holds_no_top_level_name_that_could_collide(venv: Path) -> None:
    site = next((venv / "lib").glob("python3.*/site-packages"))
    ours = {p.name for p in site.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {"bidi_tts", "bidi_tts_hearing", "bidi_tts_conformance", "bidi_tts_loadtest"} <= ours
    assert not ours & {"conformance", "loadtest", "tests"}


def test_pytest_in_the_new_venv_knows_the_plugin(venv: Path, tmp_path: Path) -> None:
    done = subprocess.run([str(venv / "bin" / "pytest"), "--help"], cwd=tmp_path, env=_clean_env(venv),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "--container-url" in done.stdout and "--conformance-report" in done.stdout


def test_one_command_checks_a_running_container_and_writes_the_reports(
        venv: Path, good_url: str, tmp_path: Path) -> None:
    began = time.monotonic()
    done = run_installed(venv, tmp_path, "--container-url", good_url, "--reply-timeout", "5")
    output = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, output
    report = json.loads((tmp_path / "reports" / "conformance.json").read_text())
    cases = report["cases"] if isinstance(report, dict) else report
    assert len(cases) > 80
    assert {c["outcome"] for c in cases} <= {"passed", "skipped"}
    # Without the hearing extra the content cases are skipped with the hint, not failed.
    content = [c for c in cases if c["id"].startswith("content.")]
    assert content and all(c["outcome"] == "skipped" and "hearing" in c["detail"] for c in content), content
    # ... and the hint is the command that works here: the same wheel with the extra (none is published)
    (wheel,) = (venv.parent / "dist").glob("bidi_tts-*.whl")
    assert all(f"pip install '{wheel}[hearing]'" in c["detail"] for c in content), content[0]["detail"]
    assert (tmp_path / "reports" / "conformance-junit.xml").stat().st_size > 0
    assert (tmp_path / "reports" / "conformance.html").stat().st_size > 0
    assert not (tmp_path / ".pytest_cache").exists()
    print(f"installed suite against the good toy: {time.monotonic() - began:.1f} s")


def test_a_broken_container_fails_the_command(venv: Path, tmp_path: Path) -> None:
    with ServerThread(NoCompleteToy().app()) as server:
        done = run_installed(venv, tmp_path, "--container-url", server.url, "--reply-timeout", "2",
                             "--case", "audio.order.1", "--conformance-report", "out.json")
    assert done.returncode == 1, done.stdout[-3000:]
    report = json.loads((tmp_path / "out.json").read_text())
    cases = report["cases"] if isinstance(report, dict) else report
    assert [(c["id"], c["outcome"]) for c in cases] == [("audio.order.1", "failed")]


def test_the_folder_s_own_pytest_configuration_does_not_leak_in(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --no-such-option-of-theirs\n")
    done = run_installed(venv, tmp_path, "--list-cases", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "frames.binary.1" in done.stdout


# -- the tools as a user meets them from the wheel (issue 25) ----------------------------------------
def run_tool(venv: Path, cwd: Path, tool: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / tool), *args], cwd=cwd, env=_clean_env(venv), capture_output=True,
                          text=True, timeout=timeout, check=False)


def test_the_installed_help_is_the_command_s_own(venv: Path, tmp_path: Path) -> None:
    done = run_installed(venv, tmp_path, "--help", timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: bidi-tts-conformance ")
    assert "--compare" in done.stdout and "69  the target cannot be reached" in done.stdout
    version = run_installed(venv, tmp_path, "--case", "x", "--version", timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("bidi-tts-conformance ")


def test_bidi_tts_load_lists_the_project_s_options_with_defaults(venv: Path, tmp_path: Path) -> None:
    done = run_tool(venv, tmp_path, "bidi-tts-load", "--help")
    text = " ".join(done.stdout.split())
    assert done.returncode == 0 and "--slo-ttfa-p95-ms" in text and "simulated LLM token rate (default: 40.0)" in text


def test_bidi_tts_load_against_a_dead_port_stops_in_seconds_with_one_line(venv: Path, tmp_path: Path) -> None:
    from bidi_tts.local_container import free_port

    url = f"http://127.0.0.1:{free_port()}"
    began = time.monotonic()
    done = run_tool(venv, tmp_path, "bidi-tts-load", "--headless", "-u", "2", "-r", "2", "--run-time", "60s",
                    "--host", url)
    assert done.returncode == 69 and time.monotonic() - began < 20
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "nothing listens" in errors[0] and "Traceback" not in done.stderr


def test_bidi_tts_load_runs_records_its_settings_ends_with_the_verdict_and_compares(
        venv: Path, good_url: str, tmp_path: Path) -> None:
    summaries = []
    for users in (1, 2):
        out = tmp_path / f"u{users}.json"
        done = run_tool(venv, tmp_path, "bidi-tts-load", "--headless", "-u", str(users), "-r", str(users),
                        "--run-time", "3s", "--host", good_url, "--tokens-per-second", "200", "--turn-pause-s",
                        "0.1", "--summary-json", str(out), "--report-dir", str(tmp_path / f"r{users}"),
                        "--slo-ttfa-p95-ms", "5000")
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stderr.rstrip().splitlines()[-1] == "  result      every threshold held (exit 0)"
        settings = json.loads(out.read_text())["settings"]
        assert settings["users"] == users and settings["host"] == good_url and settings["versions"]["bidi-tts"]
        assert (tmp_path / f"r{users}" / "over_time.png").stat().st_size > 5_000
        summaries.append(str(out))
    done = run_tool(venv, tmp_path, "bidi-tts-load", "--compare", *summaries)
    assert done.returncode == 0 and done.stdout.splitlines()[0].split() == ["u1.json", "u2.json"]
    assert any(line.startswith("users (setting)") for line in done.stdout.splitlines())
