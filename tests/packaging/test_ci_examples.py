"""docs/ci.md's examples and the gate command they call (`bidi-tts-conformance-gate`).

The examples run `bidi-tts-conformance-gate`, which .ci/run runs too against the reference image;
here: the example files call it and keep the folder it writes, and its bad usages are one line each.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "bidi_tts_conformance" / "gate.sh"
GATE_COMMAND = "bidi-tts-conformance-gate"


def _load(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "docs" / "ci" / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _gate_report_dir(env: dict[str, str]) -> str:
    return env.get("REPORT_DIR", "reports/conformance").rstrip("/")


def test_github_workflow_runs_the_gate_and_keeps_its_reports() -> None:
    steps = _load("github-actions.yml")["jobs"]["conformance"]["steps"]
    (gate,) = [s for s in steps if GATE_COMMAND in s.get("run", "")]
    report_dir = _gate_report_dir(gate.get("env", {}))
    image = gate["run"].split()[-1]
    assert any(f"docker build -t {image}" in s.get("run", "") for s in steps), "the gate checks an image the job builds"
    assert any("pip install" in s.get("run", "") and "conformance" in s["run"] for s in steps)
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and upload["with"]["path"].rstrip("/") == report_dir


def test_gitlab_job_runs_the_gate_and_keeps_its_reports() -> None:
    job = _load("gitlab-ci.yml")["tts-conformance"]
    script = " ".join(job["script"])
    assert GATE_COMMAND in script
    report_dir = _gate_report_dir(job["variables"])
    assert [p.rstrip("/") for p in job["artifacts"]["paths"]] == [report_dir]
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == f"{report_dir}/junit.xml"
    assert any("pip install" in line and "conformance" in line for line in job["before_script"])
    # dind: the engine is another host; the job must publish and reach the port accordingly
    assert job["variables"]["CONTAINER_HOST"] == "docker" and job["variables"]["BIND_ADDRESS"] == "0.0.0.0"


def test_the_workflow_shown_in_the_doc_is_the_example_file_s() -> None:
    doc = (ROOT / "docs" / "ci.md").read_text()
    (shown,) = re.findall(r"```yaml\n(.*?)```", doc, flags=re.S)
    shown_steps = yaml.safe_load(shown)["jobs"]["conformance"]["steps"]
    file_steps = _load("github-actions.yml")["jobs"]["conformance"]["steps"]
    runs = [s.get("run") for s in shown_steps if "run" in s]
    assert runs == [s.get("run") for s in file_steps if "run" in s]


def test_the_gate_writes_where_its_doc_says() -> None:
    script = GATE.read_text()
    for name in ("conformance.json", "junit.xml", "conformance.html", "container.log"):
        assert name in script and name in (ROOT / "docs" / "ci.md").read_text()


def run_gate(*args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    done = subprocess.run(["bash", str(GATE), *args], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=30, check=False)
    return done, time.monotonic() - began


@pytest.mark.parametrize(("args", "env", "says"), [
    ((), {}, "give the container image to check"),
    (("--container-url", "x"), {}, "give the container image to check"),
    (("img",), {"PORT": "eighty"}, "PORT must be a port number"),
    (("img",), {"SUITE": "magic"}, "SUITE must be 'command' or 'image'"),
])
def test_bad_usage_is_one_line(args: tuple[str, ...], env: dict[str, str], says: str) -> None:
    done, took = run_gate(*args, **env)
    assert done.returncode == 4  # docs/exit-codes.md: a usage error
    assert done.stdout == "" and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert took < 10


def _docker_answers() -> bool:
    return shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True, timeout=30, check=False).returncode == 0


@pytest.mark.docker
def test_an_image_that_is_not_there_is_one_line() -> None:
    if not _docker_answers():
        pytest.skip("no Docker engine answers")
    done, took = run_gate("bidi-tts-no-such-image:never", SUITE="image")
    assert done.returncode == 4 and done.stderr.count("\n") == 1, done.stderr
    assert "no image 'bidi-tts-no-such-image:never'" in done.stderr and took < 10


@pytest.mark.docker
def test_a_container_that_cannot_start_ends_the_gate_at_once(tmp_path: Path) -> None:
    if not _docker_answers():
        pytest.skip("no Docker engine answers")
    rootfs = "bidi-tts-rootfs:bookworm"  # the local base's rootfs: no CMD, so `docker run` refuses it
    if subprocess.run(["docker", "image", "inspect", rootfs], capture_output=True, check=False).returncode:
        pytest.skip(f"{rootfs} is not built here (docker/build-base.sh)")
    done, took = run_gate(rootfs, SUITE="image", PORT="18931", REPORT_DIR=str(tmp_path))
    assert done.returncode == 69, done.stderr  # the target never became usable
    assert "docker run failed" in done.stderr and took < 20
    assert (tmp_path / "container.log").exists()
