"""plan_model / plan_size: the arithmetic, checked against closed forms and hand computation."""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import pytest

from bidi_tts.fleet_plan import Curve, Rung
from bidi_tts_loadtest.capacity import load as capacity_load
from bidi_tts_loadtest.ladder.result_file import read_ladder
from bidi_tts_loadtest.plan import size as plan_size
from bidi_tts_loadtest.plan.model import (
    cooldowns,
    lambda_star,
    latency_p95_ms,
    lor_mean_in_system,
    occupancy,
)
from bidi_tts_loadtest.plan.size import AUDIO_S_PER_CHAR, TURN_PAUSE_S, default_chars_per_session_s
from tests.loadtest.plan_helpers import HAND, SAMPLE, SAMPLE_LADDER, SESSIONS, run

ROOT = Path(__file__).resolve().parents[2]


def assert_sized_from_throughput(plan: dict) -> None:
    """The rule for the sample's scenario: one g5 instance completes at most ~17.9 rps, so 5000 rps
    needs at least ceil(5000 / 17.87) = 280 instances, and open arrivals need more than that."""
    assert plan["max_instances"] >= math.ceil(5000 / 17.87) == 280
    assert plan["max_instances"] >= math.ceil(5000 / plan["per_instance"]["lambda_target"])


def test_the_samples_scenario_needs_at_least_the_throughput_floor(tmp_path: Path) -> None:
    code, plan = run(tmp_path, SAMPLE)
    assert code == 0
    assert_sized_from_throughput(plan)
    assert plan["max_instances"] == 370  # lambda* 16.90 rps / 1.25 = 13.52 rps an instance
    assert plan["per_instance"]["lambda_star"] == pytest.approx(16.90, abs=0.01)
    assert plan["throughput_floor"] == 280
    # until the first scale-out serves, the trough fleet carries what grows: 2 x lambda*
    assert plan["trough_capacity"] == pytest.approx(2 * plan["per_instance"]["lambda_star"], rel=1e-4)


def test_a_planner_that_sizes_from_the_uncontended_service_time_fails_the_rule(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The mutant planner: the sample's rule, instances = peak x S / (0.75 x Q_max).
    monkeypatch.setattr(plan_size, "request_fleet", lambda peak, *_: math.ceil(peak * 0.0613 / 37.5))
    _, mutant = run(tmp_path, SAMPLE)
    assert mutant["max_instances"] == 9  # the sample's published figure
    with pytest.raises(AssertionError):
        assert_sized_from_throughput(mutant)
    monkeypatch.undo()
    _, plan = run(tmp_path, SAMPLE)
    # The mutant: the sample's rule, peak x S / target, with its target (0.75 x Q_max), and with the target
    # of one instance alone (L = lambda x W). With ours, read on a fleet routed by least outstanding
    # requests (W close to S there), the rule lands near the throughput-sized figure: not a coincidence.
    for target in (0.75 * 50, plan["per_instance"]["at_target"]["in_flight_single_instance"]):
        mutant = {**plan, "max_instances": math.ceil(5000 * 0.0613 / target)}
        with pytest.raises(AssertionError):
            assert_sized_from_throughput(mutant)
    assert plan["uncontended_figure"] == math.ceil(5000 * 0.0613 / plan["target_value"])


def test_the_target_is_the_lor_fleets_l_not_one_instances(tmp_path: Path) -> None:
    _, plan = run(tmp_path, SAMPLE)
    at = plan["per_instance"]["at_target"]
    lam = plan["per_instance"]["lambda_target"]
    curve = Curve([Rung(*row) for row in plan["per_instance"]["curve"]])
    # one instance alone: Little's L with the time in system (queueing included), four times S
    assert at["in_flight_single_instance"] == pytest.approx(lam * at["time_in_system_s"], rel=1e-3)
    assert at["time_in_system_s"] > 3 * 0.0613
    # the metric is read on 370 instances routed by least outstanding requests: they pool, so it is lower
    assert plan["target_value"] == pytest.approx(lor_mean_in_system(curve, lam, plan["max_instances"]), rel=1e-3)
    assert lam * 0.0613 * 0.9 < plan["target_value"] < at["in_flight_single_instance"] / 3


def test_the_lor_chain_is_the_single_chain_for_one_instance_and_pools_for_many() -> None:
    mm1 = Curve([Rung(1, 10.0, 100.0, 100.0)])
    assert lor_mean_in_system(mm1, 7.0, 1) == pytest.approx(0.7 / 0.3)            # M/M/1: rho / (1 - rho)
    # M/M/2 at rho 0.7: L = 2 rho / (1 - rho^2) in all, so 0.7 / 0.51 = 1.37 an instance
    assert lor_mean_in_system(mm1, 7.0, 2) == pytest.approx(0.7 / (1 - 0.49), rel=1e-6)
    # many instances: a request almost never waits, L -> rho
    assert lor_mean_in_system(mm1, 7.0, 400) == pytest.approx(0.7, rel=0.01)


def test_the_chain_reproduces_mm1() -> None:
    # X(n) = mu for every n >= 1 is an M/M/1 queue: P(n) = (1 - rho) rho^n, L = rho / (1 - rho).
    curve = Curve([Rung(1, 10.0, 100.0, 100.0)])
    occ = occupancy(curve, 8.0)
    assert occ.p(0) == pytest.approx(0.2, rel=1e-9)
    assert occ.p(3) == pytest.approx(0.2 * 0.8**3, rel=1e-9)
    assert occ.mean_in_system == pytest.approx(4.0, rel=1e-6)
    assert occ.time_in_system_s == pytest.approx(1 / (10 - 8), rel=1e-6)
    assert occ.at_least(5) == pytest.approx(0.8**5, rel=1e-9)
    assert occ.in_system_quantile(0.95) == math.ceil(math.log(0.05) / math.log(0.8)) - 1  # 13
    with pytest.raises(ValueError, match="saturation"):
        occupancy(curve, 10.0)


def test_lambda_star_is_the_edge_of_the_slo() -> None:
    curve = Curve.from_service(50, 17.87, 61.3, 66.1)
    star = lambda_star(curve, 3000)
    # p95 moves in steps of one more request ahead (1 / R = 56 ms): it meets the SLO within one step
    assert 3000 - 1000 / 17.87 <= latency_p95_ms(curve, occupancy(curve, star)) <= 3000
    assert latency_p95_ms(curve, occupancy(curve, star * 1.01)) > 3000
    assert 0 < star < 17.87
    assert lambda_star(curve, 60) == 0.0  # one request alone misses


def test_hand_given_numbers_make_the_assumed_curve() -> None:
    curve = Curve.from_service(50, 17.87, 61.3, 66.1)
    assert curve.throughput(1) == pytest.approx(1 / 0.0613)  # below R: one at a time
    assert curve.throughput(10) == pytest.approx(17.87)
    assert curve.latency_ms(50) == pytest.approx((50 / 17.87 * 1000, 50 / 17.87 * 1000 + 4.8))
    assert curve.latency_ms(60)[0] == pytest.approx(60 / 17.87 * 1000)  # flat throughput past the last rung


def test_hand_given_and_ladder_agree_on_the_sample(tmp_path: Path) -> None:
    _, ladder = run(tmp_path, SAMPLE)
    _, hand = run(tmp_path, HAND)
    assert hand["per_instance"]["lambda_star"] == pytest.approx(ladder["per_instance"]["lambda_star"], rel=0.01)
    assert abs(hand["max_instances"] - ladder["max_instances"]) <= 4


def test_the_sessions_form(tmp_path: Path) -> None:
    code, plan = run(tmp_path, SESSIONS)
    assert code == 0
    assert plan["load"] == "session"
    assert plan["target_value"] == pytest.approx(16 / 1.25)
    assert plan["max_instances"] == math.ceil(2000 / 12.8) == 157
    assert plan["min_instances"] == 2  # ceil(20 / 12.8) = 2, and the floor is 2
    assert plan["scale_in_value"] == pytest.approx(12.8 * 2 / 3, rel=1e-4)
    assert plan["queue_bound"] == 16
    assert plan["trough_capacity"] == 2 * 16


def test_cost_per_million_characters_by_hand(tmp_path: Path) -> None:
    _, plan = run(tmp_path, SAMPLE)
    assert plan["cost_per_hour_peak"] == pytest.approx(370 * 1.408)
    assert plan["cost_per_million_chars_peak"] == pytest.approx(370 * 1.408 / (5000 * 25.2 * 3600) * 1e6, rel=1e-4)
    assert plan["cost_per_million_chars_trough"] == pytest.approx(2 * 1.408 / (10 * 25.2 * 3600) * 1e6, rel=1e-4)
    _, sessions = run(tmp_path, [*SESSIONS, "--chars-per-session-s", "15", "--price", "2"])
    assert sessions["cost_per_hour_peak"] == pytest.approx(157 * 2)
    assert sessions["cost_per_million_chars_peak"] == pytest.approx(157 * 2 / (2000 * 15 * 3600) * 1e6, rel=1e-4)


def test_scale_in_leaves_the_survivors_under_the_target(tmp_path: Path) -> None:
    for argv in (SAMPLE, [*SAMPLE[:4], "--trough-rps", "100", *SAMPLE[6:]]):
        _, plan = run(tmp_path, argv)
        n = plan["min_instances"]
        lam = plan["per_instance"]["lambda_target"]
        curve = Curve([Rung(*row) for row in plan["per_instance"]["curve"]])
        at_scale_in = lam * n / (n + 1)  # the per-instance rate whose L is scale_in_value
        big = plan["max_instances"]
        assert lor_mean_in_system(curve, at_scale_in, big) == pytest.approx(plan["scale_in_value"], rel=1e-3)
        # n survivors take n + 1 instances' arrivals: they land on the target, not above it
        assert lor_mean_in_system(curve, at_scale_in * (n + 1) / n, big) == pytest.approx(plan["target_value"],
                                                                                            rel=1e-3)
        assert plan["scale_in_value"] <= plan["target_value"] * n / (n + 1) * (1 + 1e-3)  # pooled L: ~linear


def test_cooldowns_follow_the_scale_out_time() -> None:
    assert cooldowns(320) == (160, 320)
    assert cooldowns(60) == (60, 300)  # never under six metric periods, nor scale-in under AWS's 300 s
    assert cooldowns(1000) == (300, 1000)


def test_the_default_characters_per_session_second_come_from_the_load_tests_corpus() -> None:
    profile = json.loads((ROOT / "reference_container/profiles/cpu-onnx-2core.json").read_text())
    assert AUDIO_S_PER_CHAR == pytest.approx(profile["audio_s_per_token"] * profile["tokens_per_char"], abs=1e-4)
    assert TURN_PAUSE_S == inspect.signature(capacity_load.measure_step).parameters["pause_s"].default
    chars, how = default_chars_per_session_s()
    assert chars == pytest.approx(14.6, abs=0.1)
    assert "corpus mean 177.4" in how


def test_the_samples_target_holds_an_instance_past_the_slo() -> None:
    # The sample tracked 37.5 in flight (0.75 x Q_max); the chain reaches that mean near saturation,
    # where an arrival's p95 is about twice the SLO (docs/capacity.md quotes 17.43 rps and 6.3 s).
    curve = Curve(read_ladder(SAMPLE_LADDER).rungs)
    lo, hi = 0.0, curve.saturation_rps
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if occupancy(curve, mid).mean_in_system < 37.5 else (lo, mid)
    assert lo == pytest.approx(17.43, abs=0.01)
    assert latency_p95_ms(curve, occupancy(curve, lo)) == pytest.approx(6330, rel=0.01)


def test_the_chain_stays_short_near_saturation_and_for_a_huge_queue() -> None:
    # Walking the chain level by level near saturation (or up to a hand-given Q_max of a million)
    # would take minutes: the tail past the flat part is geometric and the mixture stops where the
    # medians pass the SLO by 8 sigma.
    curve = Curve.from_service(1_000_000, 1000.0, 10.0, 10.0)
    assert len(occupancy(curve, 999.999).head) <= 11  # levels 0 .. the knee at R x S = 10
    assert curve.cut_level(60_000) <= 60_000 + 10  # SLO x R levels, not the million
    occ = occupancy(curve, 999.0)
    assert occ.array(5000).sum() + occ.at_least(5000) == pytest.approx(1.0, rel=1e-9)
