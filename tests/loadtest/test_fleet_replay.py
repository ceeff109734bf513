"""The three documented fleet scenarios (docs/capacity.md, "Three runs") give today's figures.

`data/fleet_before_engine_rewrite/` holds what `python -m bidi_tts_loadtest.fleet_sim` wrote for each of
them before its engine became an event loop with typed events: the verdict, the failing windows, every
window's figures, the totals and the scaling activities. The engine must replay them exactly (the same
seed draws the same numbers in the same order); only the count of events processed may differ, since
it counts the engine's own bookkeeping.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bidi_tts_loadtest.fleet.cli import main

REPO = Path(__file__).resolve().parents[2]
BEFORE = Path(__file__).parent / "data" / "fleet_before_engine_rewrite"
SHORT = ["--trough-s", "300", "--hold-s", "300", "--surge-s", "180", "--fall-s", "900"]
SCENARIOS = {
    "i": ["--plan", "tests/loadtest/data/fleet_plan_sample.json", *SHORT],
    "ii": ["--plan", "docs/fleet/plan_sample_scenario.json", *SHORT, "--statistic", "Average", "--scale-down", "6"],
    "iii": ["--plan", "docs/fleet/plan_sessions.json", "--statistic", "Average"],
}
EXPECTED_EXIT = {"i": 1, "ii": 1, "iii": 1}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_documented_scenario_replays_todays_figures(name: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    out = tmp_path / "run.json"
    assert main([*SCENARIOS[name], "--json", str(out)]) == EXPECTED_EXIT[name]
    now, before = json.loads(out.read_text()), json.loads((BEFORE / f"scenario_{name}.json").read_text())
    assert now["verdict"] == before["verdict"]
    assert now["failing_windows"] == before["failing_windows"]
    assert now["scaling"] == before["scaling"]
    assert now["surge_window_s"] == before["surge_window_s"] and now["scale_down"] == before["scale_down"]
    assert {k: v for k, v in now["totals"].items() if k != "events"} == \
        {k: v for k, v in before["totals"].items() if k != "events"}
    assert now["windows"] == before["windows"]
