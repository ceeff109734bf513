"""The fleet simulation's command and verdict: the sample's plan fails its scenario, a throughput-sized plan passes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bidi_tts.fleet_plan import Policy, parse_curve
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.fleet.cli import main
from bidi_tts_loadtest.fleet.engine import Result, Setup, Windows
from bidi_tts_loadtest.fleet.report import Meta, build
from bidi_tts_loadtest.fleet.traces import Trace
from bidi_tts_loadtest.plan.cli import main as plan_main
from tests.loadtest.plan_helpers import SAMPLE as PLAN_SAMPLE

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]
SAMPLE = DATA / "fleet_plan_sample.json"
# the sample's scenario, shortened where the verdicts do not depend on it (the ramp's slope does: kept)
SHORT = ["--trough-s", "120", "--hold-s", "120", "--surge-s", "120", "--fall-s", "300"]


def run(tmp_path: Path, *args: str) -> tuple[int, dict]:
    out = tmp_path / "fleet.json"
    code = main([*args, "--json", str(out)])
    return code, json.loads(out.read_text())


def test_the_samples_plan_fails_its_own_scenario_with_refusals(tmp_path: Path) -> None:
    png = tmp_path / "fleet.png"
    code, report = run(tmp_path, "--plan", str(SAMPLE), *SHORT, "--ramp-s", "600", "--scale-down", "9",
                       "--plot", str(png))
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert code == exit_codes.BROKEN and report["verdict"] == "FAIL"
    outside = report["failing_windows"]
    assert outside and all("refused" in w["broken"] for w in outside)
    assert report["totals"]["refused"] > report["totals"]["served"]       # 9 instances serve ~160 of 5000 rps
    assert report["totals"]["peak_instances"] <= 9
    assert "SIMULATION" in report["simulation"] and "b8fa8ef48043" in report["curve_source"]


def test_without_a_queue_bound_the_samples_plan_breaks_the_latency_slo(tmp_path: Path) -> None:
    plan = json.loads(SAMPLE.read_text()) | {"queue_bound": None}
    path = tmp_path / "unbounded.json"
    path.write_text(json.dumps(plan))
    code, report = run(tmp_path, "--plan", str(path), *SHORT, "--ramp-s", "120", "--fall-s", "60", "--scale-down", "9")
    assert code == exit_codes.BROKEN
    assert any("p95" in w["broken"] for w in report["failing_windows"]) and report["totals"]["refused"] == 0


def planner_plan(tmp_path: Path, *extra: str) -> Path:
    """The planner's own JSON for the sample's scenario (not a hand-written plan)."""
    out = tmp_path / "plan.json"
    assert plan_main([*PLAN_SAMPLE, *extra, "--json", str(out)]) == exit_codes.OK
    return out


def test_the_planners_plan_with_a_standing_floor_passes_and_with_one_instances_target_fails(
        tmp_path: Path) -> None:
    # min 180: the floor that rides the hour-long ramp (docs/capacity.md, "Simulate the fleet")
    path = planner_plan(tmp_path, "--min-floor", "180")
    code, report = run(tmp_path, "--plan", str(path), *SHORT, "--statistic", "Average", "--scale-down", "30")
    assert code == exit_codes.OK and report["verdict"] == "PASS" and not report["failing_windows"]
    assert report["totals"]["peak_instances"] >= 280 and report["totals"]["refused"] == 0
    start, end = report["surge_window_s"]
    assert start == 120 + 3600 + 120 and end == start + 320 + 60
    assert report["scale_down"]["k"] == 30 and "1/30" in report["scale_down"]["note"]
    # the same plan with the target of one instance alone (L = lambda x W = 3.35): a fleet routed by least
    # outstanding requests reaches it only near saturation, so it scales out too late and refuses
    plan = json.loads(path.read_text())
    plan["target_value"] = plan["per_instance"]["at_target"]["in_flight_single_instance"]
    path.write_text(json.dumps(plan))
    code, report = run(tmp_path, "--plan", str(path), *SHORT, "--statistic", "Average", "--scale-down", "30")
    assert code == exit_codes.BROKEN and report["totals"]["refused"] > 0
    assert any("refused" in w["broken"] for w in report["failing_windows"])


def test_the_planners_plan_as_printed_fails_the_ramp_from_its_trough(tmp_path: Path) -> None:
    # min 2: the trough fleet carries 33.8 rps at the SLO; a ramp of 1 rps a second (the built-in one is
    # 1.39) outgrows it before new capacity serves, 290 s after the load passed the target
    path = planner_plan(tmp_path)
    trace = tmp_path / "ramp.json"
    trace.write_text(json.dumps([[0, 10], [120, 10], [420, 310], [480, 310]]))
    code, report = run(tmp_path, "--plan", str(path), "--trace", str(trace), "--statistic", "Average",
                       "--scale-down", "1")
    assert code == exit_codes.BROKEN
    assert report["failing_windows"][0]["t0_s"] < 420 and "refused" in report["failing_windows"][0]["broken"]
    assert report["scaling"]["scale_outs"] and report["totals"]["refused"] > 0


# -- the verdict, judged on hand-made results ------------------------------------------------------

def verdict_of(latencies: list[list[float]], refused: list[int], surge_start: float | None) -> dict:
    n = len(latencies)
    curve = parse_curve([[1, 10.0, 100.0, 100.0]], "test")
    pol = Policy(1, 1, 1.0, 0.0, 0.0, 0.0)
    setup = Setup("request", curve, pol, 60.0, None, Trace(((0, 1.0), (n * 60.0, 1.0)), "t", surge_start))
    win = Windows(latencies, refused, [0] * n, [0] * n, [len(x) for x in latencies], [0] * n, [1] * n, [0] * n)
    res = Result(win, [], 0.0, 0, 0)
    return build(setup, res, Meta("p", "c", "t", 1000.0, 1.0, 1.0, "Maximum"))


def test_the_verdict_forgives_the_surge_window_and_nothing_else() -> None:
    slow = [2000.0] * 20
    fast = [100.0] * 20
    # surge window 120-240 s (start + 60 s scale-out + one 60 s window): windows 2 and 3
    assert verdict_of([fast, fast, slow, slow, fast], [0, 0, 5, 0, 0], 120.0)["verdict"] == "PASS"
    late = verdict_of([fast, fast, slow, slow, slow], [0] * 5, 120.0)
    assert late["verdict"] == "FAIL" and [w["t0_s"] for w in late["failing_windows"]] == [240.0]
    refused = verdict_of([fast] * 5, [0, 1, 0, 0, 0], 120.0)
    assert refused["verdict"] == "FAIL" and refused["failing_windows"][0]["broken"] == ["refused"]
    assert verdict_of([fast, fast, slow, fast, fast], [0] * 5, None)["verdict"] == "FAIL"   # no surge declared
    assert verdict_of([fast] * 5, [0] * 5, None)["verdict"] == "PASS"


# -- bad input: one line, exit 4; a failed run: 70 --------------------------------------------------

@pytest.mark.parametrize(("args", "expected"), [
    (["--plan", "/nonexistent/plan.json"], "no such file"),
    (["--plan", str(SAMPLE), "--window-s", "0"], "--window-s must be a positive number"),
    (["--plan", str(SAMPLE), "--trace", "/nonexistent/trace.json"], "built-in: ramp-surge-trough"),
    (["--plan", str(SAMPLE), "--ladder", str(SAMPLE)], "not a ladder result"),
    (["--plan", str(SAMPLE), "--statistic", "Sum"], "invalid choice"),
    (["--plan", str(SAMPLE), "--scale-down", "-2"], "--scale-down must be a positive number"),
    (["--plan", str(SAMPLE), "--window-s", "-60"], "--window-s must be a positive number"),
    (["--plan", str(SAMPLE), "--seed", "x"], "invalid int value"),
    (["--plan", str(SAMPLE), "--seed", "-1"], "--seed must be a non-negative integer"),
    (["--plan", str(SAMPLE), "--detection-lag-s", "400"], "--detection-lag-s 400 is above the scale-out time"),
])
def test_bad_input_is_one_line_and_exit_4(args: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == exit_codes.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]


@pytest.mark.parametrize(("edit", "expected"), [
    ({"min_instances": 10, "max_instances": 9}, "min_instances 10 is above max_instances 9"),
    ({"target_value": "high"}, "'target_value' must be a number"),
    ({"load": "bytes"}, "'load' must be"),
    ({"per_instance": {"curve": [[1, 2, 3]]}}, "curve row 0"),
    ({"queue_bound": 0}, "'queue_bound' must be a positive integer"),
])
def test_a_bad_plan_is_one_line_and_exit_4(edit: dict, expected: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(json.loads(SAMPLE.read_text()) | edit))
    with pytest.raises(SystemExit) as stop:
        main(["--plan", str(path)])
    assert stop.value.code == exit_codes.USAGE and expected in capsys.readouterr().err


@pytest.mark.parametrize("key", ["max_instances", "target_value", "slo_ms", "peak", "scale_out_s"])
def test_a_plan_with_a_key_missing_is_one_line_and_exit_4(key: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    plan = json.loads(SAMPLE.read_text())
    del plan[key]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    with pytest.raises(SystemExit) as stop:
        main(["--plan", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == exit_codes.USAGE and len(err) == 1 and f"'{key}' is missing" in err[0]


def test_bad_trace_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for body, expected in (("[[0, 1]]", "at least two"), ("[[5, 1], [10, 2]]", "start at 0"), ("{", "JSON list"),
                           ("[[0, 1], [10, NaN]]", "at least two"), ("[[0, 1], [10, -3]]", "loads must be >= 0"),
                           ("[[0, 1], [10, 2, 3]]", "at least two"), ("[[0, 1], [\"10\", 2]]", "at least two")):
        path = tmp_path / "trace.json"
        path.write_text(body)
        with pytest.raises(SystemExit) as stop:
            main(["--plan", str(SAMPLE), "--trace", str(path)])
        assert stop.value.code == exit_codes.USAGE and expected in capsys.readouterr().err


def test_a_file_trace_with_its_surge_declared(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([[0, 100], [300, 100], [310, 400], [400, 400], [410, 100], [900, 100]]))
    code, report = run(tmp_path, "--plan", str(SAMPLE), "--trace", str(trace), "--surge-start-s", "300",
                       "--scale-down", "1")
    assert report["surge_window_s"] == [300.0, 680.0] and code == exit_codes.BROKEN
    # 100 rps needs 6 of the sample's instances and it starts with 1: the ramp-up refuses before the surge
    assert any(w["t0_s"] < 300 for w in report["failing_windows"])


def test_new_capacity_serves_the_plans_scale_out_time_less_the_detection_lag(tmp_path: Path) -> None:
    # 60 rps on the sample's single instance (17.9 rps): the alarm fires, and the added instances serve
    # 320 - 60 = 260 s after the decision, not 320 s (the simulated alarm already spent the detection)
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([[0, 60], [700, 60]]))
    _, report = run(tmp_path, "--plan", str(SAMPLE), "--trace", str(trace), "--scale-down", "1")
    scaling = report["scaling"]
    assert scaling["launch_s"] == 260 and scaling["detection_lag_s"] == 60
    decided = scaling["scale_outs"][0][0]
    assert decided <= 40                                    # three 10 s datapoints above the target
    grew = next(d["t_s"] for d in report["datapoints"] if d["in_service"] > 1)
    assert decided + 260 <= grew <= decided + 270
    # one activity at a time: the next scale-out is decided only after the first one's instances serve
    assert all(t >= decided + 260 for t, _ in scaling["scale_outs"][1:])
    _, report = run(tmp_path, "--plan", str(SAMPLE), "--trace", str(trace), "--scale-down", "1",
                    "--detection-lag-s", "0")
    assert report["scaling"]["launch_s"] == 320


def test_the_command_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest.fleet_sim", "--plan", "/nope.json"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == exit_codes.USAGE and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    trace = tmp_path / "trace.json"
    trace.write_text("[[0, 10], [60, 10]]")
    code = main(["--plan", str(SAMPLE), "--trace", str(trace), "--plot", str(tmp_path / "no" / "such.png")])
    assert code == exit_codes.RUN_FAILED and "the run failed" in capsys.readouterr().err
