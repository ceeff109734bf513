"""The simulated autoscaler's rules, one by one, and the engine's: the scale-out delay, max and min."""

from __future__ import annotations

from bidi_tts.fleet_plan import Policy, parse_curve
from bidi_tts_loadtest.fleet.autoscaler import Autoscaler, Decision
from bidi_tts_loadtest.fleet.engine import Setup, simulate
from bidi_tts_loadtest.fleet.traces import Trace


def policy(**kw: float | int | str) -> Policy:
    base: dict = dict(min_instances=1, max_instances=10, target_value=10.0, scale_in_value=2.0,
                      scale_out_cooldown_s=60.0, scale_in_cooldown_s=300.0)
    base.update(kw)
    return Policy(**base)


def feed(scaler: Autoscaler, t0: float, seconds: int, metric: float, in_service: int = 2,
         starting: int = 0) -> list[tuple[float, Decision]]:
    """One sample a second from t0 + 1 to t0 + seconds; the decisions that did something."""
    out = []
    for i in range(1, seconds + 1):
        d = scaler.observe(t0 + i, metric, in_service, starting)
        if d.add or d.remove:
            out.append((t0 + i, d))
    return out


def test_scale_out_needs_three_consecutive_datapoints_above_target() -> None:
    s = Autoscaler(policy())
    assert feed(s, 0, 20, 15.0) == []           # two datapoints above
    assert feed(s, 20, 10, 5.0) == []           # one below: the run restarts
    assert feed(s, 30, 20, 15.0) == []
    acted = feed(s, 50, 10, 15.0)               # the third in a row
    assert [t for t, _ in acted] == [60]
    assert acted[0][1].add == 1                 # ceil(2 x 15 / 10) = 3 desired, 2 in service


def test_desired_is_proportional_and_capped_at_max() -> None:
    s = Autoscaler(policy(max_instances=5))
    acted = feed(s, 0, 30, 40.0)                # ceil(2 x 40 / 10) = 8 desired, capped at 5
    assert acted[0][1].add == 3
    s = Autoscaler(policy())
    acted = feed(s, 0, 30, 40.0, in_service=2)
    assert acted[0][1].add == 6


def test_one_scaling_activity_at_a_time() -> None:
    # the alarm is in alarm and the cooldown over, but instances are still starting: no second scale-out
    s = Autoscaler(policy(scale_out_cooldown_s=0.0))
    assert feed(s, 0, 600, 40.0, in_service=2, starting=3) == []
    # once they serve, the next datapoint in alarm acts, from the capacity in service
    acted = feed(s, 600, 10, 40.0, in_service=5, starting=0)
    assert [(t, d.add) for t, d in acted] == [(610, 5)]   # ceil(5 x 40 / 10) = 20, capped at 10


def test_no_scale_out_within_the_cooldown() -> None:
    s = Autoscaler(policy(scale_out_cooldown_s=60.0))
    first = feed(s, 0, 30, 15.0)
    assert [t for t, _ in first] == [30]
    # the alarm stays in alarm: every later datapoint qualifies, but not before 30 + 60
    later = feed(s, 30, 70, 15.0)
    assert [t for t, _ in later] == [90]


def test_statistic_maximum_sees_a_burst_that_average_smooths() -> None:
    burst = [1.0] * 9 + [50.0]                  # one high sample in each 10 s
    for stat, expect in (("Maximum", True), ("Average", False)):
        s = Autoscaler(policy(statistic=stat))
        acted = [s.observe(t + 1, burst[t % 10], 2, 0).add for t in range(30)]
        assert any(acted) is expect


def test_scale_in_only_after_the_low_periods_then_cooldown_and_never_below_min() -> None:
    s = Autoscaler(policy(scale_in_cooldown_s=300.0, min_instances=2))
    assert feed(s, 0, 120, 1.0, in_service=4) == []      # two low minutes
    acted = feed(s, 120, 60, 1.0, in_service=4)          # the third
    assert [(t, d.remove) for t, d in acted] == [(180, 1)]
    assert feed(s, 180, 240, 1.0, in_service=3) == []    # cooldown: nothing until 180 + 300
    assert [t for t, _ in feed(s, 420, 60, 1.0, in_service=3)] == [480]
    assert feed(s, 480, 1200, 1.0, in_service=2) == []   # at the minimum
    s = Autoscaler(policy())
    feed(s, 0, 120, 1.0, in_service=4)
    assert feed(s, 120, 60, 3.0, in_service=4) == []     # a period above scale_in_value restarts the count


def test_no_scale_in_while_instances_start() -> None:
    s = Autoscaler(policy())
    assert feed(s, 0, 600, 1.0, in_service=4, starting=1) == []


# -- the engine: the delay, max, min ------------------------------------------------------------------

FLAT = parse_curve([[1, 10.0, 100.0, 100.0]], "10 rps, 100 ms")


def setup(trace: list[tuple[float, float]], **kw: float | int) -> Setup:
    pol = policy(min_instances=int(kw.pop("lo", 1)), max_instances=int(kw.pop("hi", 4)), target_value=2.0,
                 scale_in_value=0.2, scale_out_cooldown_s=30.0, scale_in_cooldown_s=120.0)
    return Setup(load="request", curve=FLAT, policy=pol, scale_out_s=float(kw.pop("delay", 200.0)),
                 queue_bound=50, trace=Trace(tuple(trace), "test", None), window_s=30.0, seed=1)


def test_new_instances_serve_only_scale_out_s_after_the_decision_and_never_above_max() -> None:
    res = simulate(setup([(0, 30.0), (600, 30.0)], hi=4, delay=200.0))   # 30 rps on one 10 rps instance
    first, added = res.scale_outs[0]
    assert added == 3                                                     # capped at max 4
    serving = {t: n for t, n, _, _ in res.samples}
    assert serving[first + 190] == 1 and serving[first + 210] == 4
    assert max(n + s for _, n, s, _ in res.samples) <= 4
    # while they started, the one instance was full: refusals (bound 50), none after they serve
    late = int((first + 260) / 30)
    assert sum(res.windows.refused[:late]) > 0 and sum(res.windows.refused[late + 1:]) == 0


def test_the_delay_is_what_the_simulation_waits() -> None:
    short = simulate(setup([(0, 30.0), (600, 30.0)], delay=50.0))
    long_ = simulate(setup([(0, 30.0), (600, 30.0)], delay=300.0))
    assert sum(short.windows.refused) < sum(long_.windows.refused) / 3


def test_scale_in_drains_down_to_min_and_requests_finish() -> None:
    pol = policy(min_instances=2, max_instances=4, target_value=2.0, scale_in_value=0.5, scale_out_cooldown_s=30.0,
                 scale_in_cooldown_s=120.0)
    trace = Trace(((0, 35.0), (300, 35.0), (310, 1.0), (2400, 1.0)), "test", None)
    res = simulate(Setup(load="request", curve=FLAT, policy=pol, scale_out_s=60.0, queue_bound=50, trace=trace,
                         window_s=30.0, seed=2))
    assert res.scale_outs and res.scale_ins
    assert min(n for _, n, _, _ in res.samples) >= 2           # never below min
    assert res.samples[-1][1] == 2
    assert res.unfinished == 0 and sum(res.windows.arrived) == sum(res.windows.served) + sum(res.windows.refused)
    gaps = [b - a for a, b in zip(res.scale_ins, res.scale_ins[1:], strict=False)]
    assert all(g >= 120 for g in gaps)
