"""The planner replays its own plan on a trace and raises the floor until the plan passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.fleet.cli import main as fleet_sim
from bidi_tts_loadtest.plan.cli import main
from tests.loadtest.plan_helpers import SAMPLE_LADDER, usage_error

pytestmark = pytest.mark.timeout(300)
CAPACITY = ["--ladder", str(SAMPLE_LADDER), "--slo-ms", "3000", "--scale-out-s", "320", "--surge", "1.25",
            "--instance-type", "ml.g5.xlarge"]
#: a ramp from 1 to 100 rps in 150 s, far steeper than target tracking follows from two instances
STEEP = [[0, 1], [60, 1], [210, 100], [510, 100]]


def _plan(tmp_path: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "plan.json"
    code = main([*CAPACITY, *extra, "--json", str(out)])
    return code, json.loads(out.read_text())


def _trace(tmp_path: Path, rows: list[list[float]]) -> str:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(rows))
    return str(path)


def test_a_plan_that_fails_its_ramp_gets_the_smallest_floor_that_passes(tmp_path: Path) -> None:
    trace = _trace(tmp_path, STEEP)
    code, plan = _plan(tmp_path, "--peak-rps", "100", "--trough-rps", "1", "--trace", trace)
    assert code == exit_codes.OK
    check = plan["simulation"]
    assert check["printed_min_instances"] == 2 and check["passing_min_instances"] == plan["min_instances"] > 2
    by_min = {t["min_instances"]: t["verdict"] for t in check["tries"]}
    assert by_min[2] == "FAIL" and by_min[plan["min_instances"]] == "PASS"
    assert by_min.get(plan["min_instances"] - 1, "FAIL") == "FAIL"  # the smallest that passes
    assert [f["level"] for f in plan["findings"] if f["name"] == "floor_raised_by_simulation"] == ["WARN"]
    # the plan as written passes the fleet simulation's own command on the same trace
    report = tmp_path / "fleet.json"
    assert fleet_sim(["--plan", str(tmp_path / "plan.json"), "--trace", trace, "--statistic", "Average",
                      "--json", str(report)]) == exit_codes.OK


def test_without_a_trace_the_plan_is_the_arithmetic_alone(tmp_path: Path) -> None:
    code, plan = _plan(tmp_path, "--peak-rps", "100", "--trough-rps", "1", "--trace", "none")
    assert code == exit_codes.OK and plan["min_instances"] == 2 and "simulation" not in plan


def test_a_plan_that_passes_as_printed_keeps_its_floor(tmp_path: Path) -> None:
    code, plan = _plan(tmp_path, "--peak-rps", "100", "--trough-rps", "100",
                       "--trace", _trace(tmp_path, [[0, 100], [600, 100]]))
    assert code == exit_codes.OK
    assert plan["simulation"]["passing_min_instances"] == plan["simulation"]["printed_min_instances"]
    assert [f["name"] for f in plan["findings"] if f["level"] == "OK"][-1] == "passes_its_simulation"


def test_a_trace_that_cannot_be_read_is_one_line_and_exit_4(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    line = usage_error([*CAPACITY, "--peak-rps", "100", "--trough-rps", "1", "--trace", str(tmp_path / "no.json")],
                       capsys)
    assert "--trace" in line and "no such file" in line
