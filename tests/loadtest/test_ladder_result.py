"""Q_max over a ladder's rungs: bracketing, lower bounds, unusable rungs left out, the minimum over runs."""

from __future__ import annotations

import argparse

from bidi_tts_loadtest.ladder.cli import climb
from bidi_tts_loadtest.ladder.result import result, run_q_max, verdict_line
from bidi_tts_loadtest.ladder.rung import Collected, Sample


def r(level: float, ok: bool, *, run: int = 1, usable: bool = True, rps: float = 10.0, p95: float = 100.0,
      mean: float = 50.0) -> dict:
    return {"run": run, "level": level, "meets_slo": ok, "usable": usable, "achieved_rps": rps,
            "ttfa_ms": {"mean": mean, "p95": p95}, "chars": 250, "completed": 10, "concurrency_mean": level,
            "window_s": 1.0}


def test_q_max_is_the_largest_passing_level_bracketed_by_a_failure_above() -> None:
    assert run_q_max([r(1, True), r(5, True), r(10, False)]) == (5, True)


def test_without_a_failing_rung_above_it_is_only_a_lower_bound() -> None:
    assert run_q_max([r(1, True), r(5, True)]) == (5, False)
    res = result([r(1, True), r(5, True)], runs=1, load="request", loop="closed")
    assert res["q_max"] == 5 and not res["bracketed"]
    assert "LOWER BOUND" in verdict_line(res, "clients")


def test_unusable_rungs_count_neither_as_pass_nor_as_bracket() -> None:
    # The passing 10 was unusable (the client was the limit): Q_max 5. The failing 20 was unusable too:
    # nothing usable above 5 failed, so 5 is only a lower bound.
    assert run_q_max([r(1, True), r(5, True), r(10, True, usable=False), r(20, False, usable=False)]) == (5, False)
    assert run_q_max([r(1, False, usable=False)]) == (None, False)


def test_nothing_passing_is_zero_bracketed_by_the_lowest() -> None:
    assert run_q_max([r(1, False), r(5, False)]) == (0, True)


def test_the_ladder_takes_the_minimum_over_runs_and_their_spread() -> None:
    rungs = [r(1, True), r(5, True), r(10, False),
             r(1, True, run=2), r(5, False, run=2, rps=9.0), r(10, False, run=2),
             r(1, True, run=3, rps=7.0, p95=300.0), r(5, True, run=3), r(10, True, run=3)]
    res = result(rungs, runs=3, load="request", loop="closed")
    assert res["q_max_per_run"] == [5, 1, 10] and res["q_max"] == 1 and res["q_max_spread"] == 9
    assert not res["bracketed"]  # run 3's 10 is only a lower bound
    # At Q_max: the least throughput and the highest p95 over the runs' rungs at that level.
    assert res["rps_at_q_max"] == 7.0 and res["ttfa_p95_at_q_max_ms"] == 300.0
    assert res["saturation_rps"] == 10.0 and res["chars_per_request"] == 25.0
    assert result(rungs[:6], runs=2, load="request", loop="closed")["bracketed"]


def test_service_time_comes_from_one_client_only() -> None:
    res = result([r(1, True, mean=61.0, p95=66.0), r(5, True)], runs=1, load="request", loop="closed")
    assert (res["service_mean_ms"], res["service_p95_ms"]) == (61.0, 66.0)
    assert result([r(5, True)], runs=1, load="request", loop="closed")["service_mean_ms"] is None
    assert result([r(1, True)], runs=1, load="request", loop="open")["service_mean_ms"] is None


def _fake_rung(meets: list[bool]) -> object:
    """A rung runner whose level i meets a 100 ms SLO or not, as given (10 requests of 50 or 500 ms)."""
    def run_rung(level: float, run: int, index: int) -> Collected:
        service = 0.05 if meets[index] else 0.5
        samples = [Sample(sent_at=i * 0.1, first_at=i * 0.1 + service, done_at=i * 0.1 + service) for i in range(10)]
        return Collected("open", level, 0.0, 1.0, 1.0, 2.0, samples=samples, spans=samples)
    return run_rung


def test_climbing_stops_after_two_failing_rungs_in_a_row() -> None:
    args = argparse.Namespace(load="request", loop="open", runs=1, levels=[1, 2, 3, 4, 5, 6], idle_s=0.0,
                              hold_s=1.0, measure_s=1.0, slo_ms=100.0, max_lag_ms=20.0, stop_after_fails=2)
    lines: list[str] = []
    rungs = climb(args, _fake_rung([True, False, True, False, False, True]), out=lines.append)  # type: ignore[arg-type]
    assert [x["level"] for x in rungs] == [1, 2, 3, 4, 5]
    assert "2 usable rungs in a row over the SLO: stop climbing" in lines[-1]
    args.stop_after_fails = 0
    assert len(climb(args, _fake_rung([True, False, True, False, False, True]), out=lines.append)) == 6  # type: ignore[arg-type]
