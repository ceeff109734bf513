"""plan_findings: each finding fires in its situation and stays silent outside it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.loadtest.plan_helpers import HAND, SAMPLE, SESSIONS, ladder_data, run, write_ladder

Argv = Callable[[Path], list[str]]


def _ladder(tmp_path: Path, **result: object) -> list[str]:
    data = ladder_data()
    data["result"].update(result)
    return ["--ladder", write_ladder(tmp_path, data), *SAMPLE[2:]]


def _two_runs(tmp_path: Path) -> list[str]:
    data = ladder_data()
    data["rungs"] += [{**rung, "run": 1} for rung in data["rungs"]]
    data["result"]["q_max_per_run"] = [50, 50]
    return ["--ladder", write_ladder(tmp_path, data), *SAMPLE[2:]]


def _with(argv: list[str], option: str, value: str) -> list[str]:
    out = list(argv)
    out[out.index(option) + 1] = value
    return out


# name, level, argv where it fires, argv where it does not
CASES: list[tuple[str, str, Argv, Argv]] = [
    ("service_p95_over_slo", "STOP", lambda t: _with(HAND, "--slo-ms", "66"), lambda t: HAND),
    ("held_none", "STOP", lambda t: _with(SESSIONS, "--held-sessions", "0.5"), lambda t: SESSIONS),
    ("over_quota", "STOP", lambda t: [*SAMPLE, "--quota", "369"], lambda t: [*SAMPLE, "--quota", "370"]),
    ("qmax_lower_bound", "WARN", lambda t: _ladder(t, bracketed=False), lambda t: SAMPLE),
    ("single_run", "WARN", lambda t: SAMPLE, _two_runs),
    ("curve_assumed", "WARN", lambda t: HAND, lambda t: SAMPLE),
    ("slo_differs_from_ladder", "WARN", lambda t: _with(SAMPLE, "--slo-ms", "2500"), lambda t: SAMPLE),
    ("min_one_instance", "WARN", lambda t: [*SAMPLE, "--min-floor", "1"], lambda t: SAMPLE),
    ("surge_headroom", "WARN", lambda t: _with(SAMPLE, "--surge", "1.6"), lambda t: SAMPLE),
    ("growth_from_trough", "WARN", lambda t: SAMPLE, lambda t: [*SAMPLE, "--min-floor", "370"]),
    ("queue_rejects_at_target", "WARN", lambda t: _with(HAND, "--qmax", "5"), lambda t: HAND),
    ("sized_from_throughput", "OK", lambda t: SAMPLE, lambda t: SESSIONS),
    ("target_in_concurrency", "OK", lambda t: SAMPLE, lambda t: SESSIONS),
    ("session_counts_as_one_invocation", "WARN", lambda t: SESSIONS, lambda t: SAMPLE),
    ("sessions_do_not_move", "WARN", lambda t: SESSIONS, lambda t: SAMPLE),
    ("no_session_admission_bound", "WARN", lambda t: SESSIONS, lambda t: SAMPLE),
    ("chars_per_request_unknown", "WARN", lambda t: [a for a in HAND if a not in ("--chars-per-request", "25.2")],
     lambda t: HAND),
]


@pytest.mark.parametrize(("name", "level", "fires", "silent"), CASES, ids=[c[0] for c in CASES])
def test_a_finding_fires_in_its_situation_only(tmp_path: Path, name: str, level: str, fires: Argv,
                                               silent: Argv) -> None:
    code, plan = run(tmp_path, fires(tmp_path))
    hit = [f for f in plan["findings"] if f["name"] == name]
    assert len(hit) == 1 and hit[0]["level"] == level, plan["findings"]
    assert hit[0]["detail"]
    if level == "STOP":
        assert code == 1
    code, plan = run(tmp_path, silent(tmp_path))
    assert name not in {f["name"] for f in plan["findings"]}
    if level == "STOP":
        assert code == 0


def test_every_finding_has_a_case() -> None:
    from bidi_tts_loadtest.plan.findings import CHECKS

    assert len(CHECKS) == len(CASES)


def test_a_stop_exits_1_and_still_writes_a_plan(tmp_path: Path) -> None:
    code, plan = run(tmp_path, [*SAMPLE, "--quota", "100"])
    assert code == 1
    assert plan["max_instances"] == 370  # the plan says what it would take
    code, plan = run(tmp_path, _with(HAND, "--slo-ms", "66"))
    assert code == 1
    assert plan["target_value"] is None  # no arrival rate meets the SLO: no target to give
    assert plan["max_instances"] >= 280  # the throughput floor still stands


def test_sized_from_throughput_shows_the_samples_error_beside_the_floor(tmp_path: Path) -> None:
    _, plan = run(tmp_path, SAMPLE)
    detail = next(f["detail"] for f in plan["findings"] if f["name"] == "sized_from_throughput")
    assert "= 280" in detail  # ceil(5000 / 17.87)
    assert "0.75 x Q_max = 37.5, 9" in detail  # the sample's own figure


def test_the_queue_bound_is_re_read_at_another_slo(tmp_path: Path) -> None:
    _, plan = run(tmp_path, _with(SAMPLE, "--slo-ms", "2500"))
    # between the rungs 40 (p95 2245 ms) and 50 (2806 ms): 40 + 10 x 255 / 561 = 44.5
    assert plan["queue_bound"] == 44


def test_a_queue_bound_under_the_curves_edge_says_how_far_it_may_rise(tmp_path: Path) -> None:
    _, plan = run(tmp_path, _with(HAND, "--qmax", "5"))
    detail = next(f["detail"] for f in plan["findings"] if f["name"] == "queue_rejects_at_target")
    # the assumed curve meets 3000 ms up to n = 3000 ms x 17.87 rps - the p95 spread, so 53 in system
    assert plan["per_instance"]["slo_edge_level"] == 53
    assert "raise --max-queue to 53" in detail


def _session_ladder(tmp_path: Path, slo_ms: float) -> list[str]:
    data = ladder_data()
    data.update(load="session")
    data["settings"]["slo_ms"] = 300
    data["result"].update(q_max=20, chars_per_session_s=12.5)
    return ["--ladder", write_ladder(tmp_path, data), *_with(SESSIONS, "--slo-ms", f"{slo_ms:g}")[2:]]


@pytest.mark.parametrize(("slo_ms", "level", "code"), [(200, "STOP", 1), (400, "WARN", 0), (300, None, 0)])
def test_sessions_held_at_another_slo(tmp_path: Path, slo_ms: float, level: str | None, code: int) -> None:
    got, plan = run(tmp_path, _session_ladder(tmp_path, slo_ms))
    assert got == code
    hit = [f["level"] for f in plan["findings"] if f["name"] == "slo_differs_from_ladder"]
    assert hit == ([] if level is None else [level])
