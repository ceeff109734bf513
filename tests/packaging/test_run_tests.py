"""scripts/run_tests.py, the two phases of `./run tests`: its arguments, its exit status, its junit file."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_tests", ROOT / "scripts" / "run_tests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_options_are_taken_out_in_both_spellings() -> None:
    split = _runner().split_option
    assert split(["-q", "--junitxml=a.xml", "tests"], "--junitxml") == ("a.xml", ["-q", "tests"])
    assert split(["--junitxml", "b.xml", "-x"], "--junitxml") == ("b.xml", ["-x"])
    assert split(["-m", "slow", "-k", "x"], "-m") == ("slow", ["-k", "x"])
    assert split(["-k", "x"], "-m") == (None, ["-k", "x"])


def test_the_status_is_a_failure_first_and_no_tests_only_when_neither_phase_ran_one() -> None:
    status = _runner().combined_status
    assert status([0, 0]) == 0
    assert status([5, 0]) == 0 and status([0, 5]) == 0
    assert status([5, 5]) == 5
    assert status([1, 0]) == 1 and status([0, 2]) == 2 and status([5, 1]) == 1


def test_a_user_marker_expression_narrows_both_phases() -> None:
    narrow = _runner().marker_filter
    assert narrow(None, "not serial") == "not serial"
    assert narrow("slow or docker", "serial") == "(slow or docker) and serial"


def test_both_phases_run_and_their_suites_land_in_one_junit_file(tmp_path: Path) -> None:
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_two.py").write_text(
        "import pytest\n\n"
        "def test_parallel():\n    pass\n\n"
        "@pytest.mark.serial\ndef test_serial():\n    pass\n\n"
        "@pytest.mark.serial\ndef test_serial_fails():\n    assert False\n")
    (tests / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial: alone\n")
    junit = tmp_path / "out" / "junit.xml"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_tests.py"), str(tests), "-p", "no:cacheprovider",
                          "-c", str(tests / "pytest.ini"), "--rootdir", str(tests), f"--junitxml={junit}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=None)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "the parallel phase ended with status 0" in run.stdout
    assert "the serial phase ended with status 1" in run.stdout
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"test_parallel", "test_serial", "test_serial_fails"}
    assert cases["test_serial_fails"].find("failure") is not None
    assert not list(junit.parent.glob("junit.xml.*.xml"))  # the phases' own files are merged away
