"""A replay that stops once its FAIL is certain (the planner's self-check) gives the whole run's verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bidi_tts.fleet_plan import Plan, plan_from_json
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.fleet import replay as replay_module
from bidi_tts_loadtest.fleet.replay import ReplayOptions, replay
from bidi_tts_loadtest.fleet.traces import Trace
from bidi_tts_loadtest.plan.cli import main as plan_main
from tests.loadtest.plan_helpers import SAMPLE_LADDER

CAPACITY = ["--ladder", str(SAMPLE_LADDER), "--slo-ms", "3000", "--scale-out-s", "320", "--surge", "1.25",
            "--instance-type", "ml.g5.xlarge", "--peak-rps", "100", "--trough-rps", "1", "--trace", "none"]
#: test_plan_self_check.py's ramp: 1 to 100 rps in 150 s, which two standing instances cannot follow
STEEP = Trace(((0.0, 1.0), (60.0, 1.0), (210.0, 100.0), (510.0, 100.0)), "steep", None)
OPTIONS = ReplayOptions(statistic="Average")


def _plan(tmp_path: Path, floor: int) -> Plan:
    out = tmp_path / f"plan{floor}.json"
    assert plan_main([*CAPACITY, "--min-floor", str(floor), "--json", str(out)]) == exit_codes.OK
    return plan_from_json(json.loads(out.read_text()), "plan")


def test_stopping_at_a_certain_fail_keeps_every_verdict(tmp_path: Path) -> None:
    verdicts, settled = set(), 0
    for floor in (2, 4, 6, 8, 12):
        plan = _plan(tmp_path, floor)
        assert plan.curve is not None
        whole = replay(plan, plan.curve, STEEP, OPTIONS, "plan").report
        stopped = replay(plan, plan.curve, STEEP, OPTIONS, "plan", stop_at_fail=True).report
        assert stopped["verdict"] == whole["verdict"], floor
        assert whole["settled_at_s"] is None
        verdicts.add(whole["verdict"])
        if stopped["settled_at_s"] is None:  # every pass, and a fail that is certain only at the end
            assert stopped == whole
            continue
        settled += 1
        assert stopped["verdict"] == "FAIL" and stopped["settled_at_s"] < STEEP.duration_s
        failing = stopped["failing_windows"]
        assert failing and all(f["t0_s"] <= stopped["settled_at_s"] for f in failing)
        assert stopped["totals"]["refused"] <= whole["totals"]["refused"]
        assert stopped["totals"]["events"] < whole["totals"]["events"]
    assert verdicts == {"PASS", "FAIL"} and settled >= 1


def test_a_long_replay_says_how_far_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_module, "PROGRESS_EVERY_S", 0.0)
    plan = _plan(tmp_path, 12)
    assert plan.curve is not None
    lines: list[str] = []
    replay(plan, plan.curve, STEEP, OPTIONS, "plan", progress=lines.append)
    assert lines and all("simulated s" in line for line in lines)
    assert lines[-1].split()[1] == "510"  # the last sample, at the trace's end
