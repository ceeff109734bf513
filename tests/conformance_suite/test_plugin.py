"""The pytest plugin end to end: `pytest conformance --container-url ...` as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.toys import broken
from tests.toys.good import ServerThread
from tests.toys.speaking import SpeakingToy, espeak_available

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = {"OK", "NON-STRICT", "FAILED", "INFORMATIONAL", "SKIPPED", "NOT-JUDGED"}


def run_suite(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "conformance/test_cases.py", "-p", "no:cacheprovider",
         "--reply-timeout", "5", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )


@pytest.fixture(scope="module")
def good_url() -> Iterator[str]:
    # The toy speaks (espeak-ng) so that the content.* cases hear words; tones would fail them.
    toy = SpeakingToy() if espeak_available() else pytest.skip("needs espeak-ng (Debian package espeak-ng)")
    with ServerThread(toy.app()) as server:
        yield server.url


@pytest.mark.timeout(300)
def test_good_toy_passes_every_case_with_reports(good_url: str, tmp_path: Path) -> None:
    report, junit = tmp_path / "conformance.json", tmp_path / "junit.xml"
    proc = run_suite("--container-url", good_url, "--conformance-report", str(report),
                     f"--junitxml={junit}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    entries = json.loads(report.read_text())["cases"]
    from bidi_tts_conformance.cases import REGISTRY
    from bidi_tts_conformance.selection import run_order

    assert [e["id"] for e in entries] == [c.id for c in run_order(list(REGISTRY))]
    for e in entries:
        assert set(e) >= {"id", "clauses", "outcome", "verdict", "detail"}
        assert e["outcome"] in {"passed", "skipped"}, e
        assert e["verdict"] in VERDICTS
        assert e["clauses"] and all(c.startswith(("SM-", "TTS-", "POST-")) for c in e["clauses"])
    by_id = {e["id"]: e for e in entries}
    assert by_id["cancel.1"]["verdict"] == "NON-STRICT" and by_id["cancel.1"]["outcome"] == "passed"
    assert by_id["sagemaker.close.1"]["outcome"] == "skipped"
    assert "SageMaker" in by_id["sagemaker.close.1"]["detail"]
    # JUnit: test names are the case ids, with clauses and verdict as properties.
    cases = {tc.get("name"): tc for tc in ET.parse(junit).getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["frames.binary.1"].iter("property")}
    assert props["clauses"] == "TTS-BINARY-IN,SM-FRAMES-IN" and props["verdict"] == "OK"
    # The readable summary and the report path are printed at the end.
    assert "frames.binary.1" in proc.stdout and str(report.resolve()) in proc.stdout
    # The timeouts chosen for this container are printed for people, not captured away.
    header = [line for line in proc.stdout.splitlines() if line.startswith("[conformance] silence allowed 5.0 s")]
    assert header and "calibrated: 'Hi.' first audio" in header[0], proc.stdout[:3000]


@pytest.mark.timeout(120)
def test_binary_bug_fails_with_the_real_cause(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    with ServerThread(broken.TextOnlyToy().app()) as server:
        proc = run_suite("--container-url", server.url, "--case", "frames.binary.*",
                         "--case", "frames.text.*",
                         "--conformance-report", str(report))
    assert proc.returncode == 1, proc.stdout[-3000:]
    by_id = {e["id"]: e for e in json.loads(report.read_text())["cases"]}
    assert set(by_id) == {"frames.binary.1", "frames.text.1"}
    assert by_id["frames.binary.1"]["outcome"] == "failed"
    assert by_id["frames.binary.1"]["verdict"] == "FAILED"
    assert "binary frame not handled" in by_id["frames.binary.1"]["detail"]
    assert by_id["frames.text.1"]["outcome"] == "passed"
    assert "expected:" in proc.stdout and "binary frame not handled" in proc.stdout


@pytest.mark.timeout(120)
def test_strict_turns_non_strict_into_failure(good_url: str, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    lenient = run_suite("--container-url", good_url, "-k", "cancel", "--conformance-report", str(report))
    assert lenient.returncode == 0, lenient.stdout[-2000:]
    strict = run_suite("--container-url", good_url, "-k", "cancel", "--conformance-strict",
                       "--conformance-report", str(report))
    assert strict.returncode == 1, strict.stdout[-2000:]
    by_id = {e["id"]: e for e in json.loads(report.read_text())["cases"]}
    assert by_id["cancel.1"] == {**by_id["cancel.1"], "outcome": "failed", "verdict": "NON-STRICT"}


def test_list_cases_prints_ids_and_clauses() -> None:
    proc = run_suite("--list-cases", "--case", "errors.*", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("errors.")]
    assert len(lines) >= 10 and all("TTS-ERROR" in line for line in lines)
    assert "frames.binary.1" not in proc.stdout


@pytest.mark.timeout(120)
def test_a_named_container_is_judged_by_its_cases_alone_each_failure_printed_once() -> None:
    """The suite's own property tests stay out of the totals a container author reads, and a failure
    is printed once, in the summary table with its expected and actual (issue 23)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with ServerThread(broken.TextOnlyToy().app()) as server:
        collected = subprocess.run(
            [sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", "--container-url", server.url,
             "--collect-only", "-q"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
        proc = run_suite("--container-url", server.url, "--case", "frames.binary.1")
    assert "properties" not in collected.stdout and "deselected" in collected.stdout, collected.stdout[-2000:]
    assert proc.returncode == 1
    assert proc.stdout.count("binary frame not handled") == 1, proc.stdout[-3000:]
    row = next(line for line in proc.stdout.splitlines() if line.startswith("frames.binary.1"))
    assert "FAILED" in row and "binary frame not handled" in row
    assert "expected: the message in a BINARY frame" in proc.stdout
