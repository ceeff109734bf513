"""Session load in the fleet simulation: the count follows the trace, sessions stay put, drops and refusals count."""

from __future__ import annotations

import numpy as np
import pytest

from bidi_tts.fleet_plan import Policy, parse_curve
from bidi_tts_loadtest.fleet.engine import Result, Setup, simulate
from bidi_tts_loadtest.fleet.traces import Trace, arrivals, request_rates

CURVE = parse_curve([[10, 1.0, 300.0, 600.0], [40, 1.0, 900.0, 2000.0]], "sessions curve (test)")


def run(trace: list[tuple[float, float]], *, lo: int = 1, hi: int = 1, bound: int | None = None,
        target: float = 1000.0, scale_in: float = 0.0, delay: float = 100.0, seed: int = 0,
        statistic: str = "Maximum") -> tuple[Setup, Result]:
    pol = Policy(min_instances=lo, max_instances=hi, target_value=target, scale_in_value=scale_in,
                 scale_out_cooldown_s=30.0, scale_in_cooldown_s=60.0, scale_in_periods=1,
                 statistic="Average" if statistic == "Average" else "Maximum")
    s = Setup(load="session", curve=CURVE, policy=pol, scale_out_s=delay, queue_bound=bound,
              trace=Trace(tuple(trace), "test", None), window_s=60.0, session_mean_s=60.0, turn_interval_s=5.0,
              seed=seed)
    return s, simulate(s)


def test_poisson_arrivals_follow_a_piecewise_linear_rate() -> None:
    trace = Trace(((0, 0.0), (100, 100.0), (200, 100.0)), "t", None)
    t = arrivals(request_rates(trace), np.random.default_rng(0))
    assert len(t) == pytest.approx(5000 + 10_000, rel=0.03)
    assert np.sum(t < 50) == pytest.approx(50 * 50 / 2, rel=0.08)   # the ramp's first half: a quarter of it
    assert np.all(np.diff(t) >= 0)


def test_the_concurrent_count_follows_the_trace() -> None:
    _, res = run([(0, 20.0), (3000, 20.0), (3300, 40.0), (6300, 40.0)], hi=1, statistic="Average")
    # the metric datapoints (Average of 1 s samples) are the sessions on the one instance
    level = {t: m for t, _, _, m in res.samples}
    early = np.mean([level[t] for t in range(300, 3000, 10)])
    ramp = np.mean([level[t] for t in range(3140, 3160, 10)])
    late = np.mean([level[t] for t in range(3600, 6300, 10)])
    assert early == pytest.approx(20, abs=2) and late == pytest.approx(40, abs=3)
    assert 25 < ramp < 35   # halfway up the ramp, lagging it by a little (sessions last 60 s)


def test_sessions_above_the_curve_are_flagged_and_slower() -> None:
    _, res = run([(0, 60.0), (600, 60.0)])
    assert sum(res.windows.over_curve) > 0.5 * sum(res.windows.served)
    _, calm = run([(0, 10.0), (600, 10.0)])
    assert sum(calm.windows.over_curve) < 0.2 * sum(calm.windows.served)


def test_an_instance_at_its_session_bound_refuses() -> None:
    _, res = run([(0, 30.0), (600, 30.0)], bound=20)
    assert sum(res.windows.refused) > 0
    _, free = run([(0, 30.0), (600, 30.0)], bound=None)
    assert sum(free.windows.refused) == 0


def test_new_instances_only_get_new_sessions() -> None:
    # 40 sessions on one instance; a second one serves from ~130 s: no session moves to it
    _, res = run([(0, 40.0), (1200, 40.0)], hi=2, target=20.0, delay=100.0)
    joined = next(i for i, (_, loads) in enumerate(res.per_instance) if len(loads) == 2)
    t0, (old, new) = res.per_instance[joined]
    assert old >= 15 and new <= 3       # a fleet that moved sessions would show them split evenly here
    # from then on LOR sends every new session to the emptier one, while the old one loses its sessions
    # only as they end (mean 60 s): they even out within a minute, not at once
    _, (old_10, new_10) = next(p for p in res.per_instance if p[0] >= t0 + 10)
    assert old_10 > new_10
    _, (old_60, new_60) = next(p for p in res.per_instance if p[0] >= t0 + 60)
    assert abs(old_60 - new_60) <= 2


def test_scale_in_drops_the_sessions_of_the_removed_instance() -> None:
    _, res = run([(0, 30.0), (600, 30.0), (610, 2.0), (1500, 2.0)], lo=1, hi=3, target=10.0, scale_in=5.0)
    assert res.scale_ins and sum(res.windows.dropped) > 0
