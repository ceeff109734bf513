"""Replay one plan against one trace: the policy scaled for speed, the simulation, and its report.

The fleet simulation's command and the planner (which checks its own plan before printing it) both
come here, so a plan is judged the same way whoever asks.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bidi_tts.fleet_plan import Curve, Plan, Policy, Statistic
from bidi_tts_loadtest.fleet.engine import Result, Setup, Watch, simulate
from bidi_tts_loadtest.fleet.report import FailureWatch, Meta, build
from bidi_tts_loadtest.fleet.traces import Trace

#: The sample's 320 s scale-out time is 260 s measured from the desired count set to traffic recovered plus
#: 60 s of policy detection lag (the planner's scale_out_s includes it). The simulated alarm detects on
#: its own datapoints, so new instances serve scale_out_s - DETECTION_LAG_S after the decision.
DETECTION_LAG_S = 60.0

#: Auto scale-down keeps the simulated fleet's event rate near this many events per simulated second.
EVENTS_PER_S = 1000.0

#: With a progress callback, a line at most this often (wall-clock seconds) while a run goes on.
PROGRESS_EVERY_S = 10.0


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """How the simulation reads the plan: the alarms' shape, the session model, the clock, the speed-up."""

    statistic: Statistic = "Maximum"
    alarm_points: int = 3
    scale_in_periods: int = 3
    scale_in_period_s: float = 60.0
    window_s: float = 60.0
    session_mean_s: float = 180.0
    turn_interval_s: float = 10.0
    scale_out_s: float | None = None  # None: the plan's
    detection_lag_s: float = DETECTION_LAG_S
    scale_down: float | None = None  # None: chosen for speed
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Replay:
    setup: Setup
    result: Result
    report: dict[str, Any]
    scale_down: float
    scale_out_s: float


def scaled_policy(policy: Policy, k: float, options: ReplayOptions) -> Policy:
    """The plan's policy for 1/k of the fleet, with the alarms' shape the options give."""
    return dataclasses.replace(
        policy, min_instances=math.ceil(policy.min_instances / k - 1e-9),
        max_instances=max(1, math.ceil(policy.max_instances / k - 1e-9)), statistic=options.statistic,
        alarm_points=options.alarm_points, scale_in_periods=options.scale_in_periods,
        scale_in_period_s=options.scale_in_period_s)


def auto_scale_down(peak_rate: float, hi: int, lo: int = 0) -> float:
    """The largest k <= peak_rate / EVENTS_PER_S that keeps max and min within 5% (ceil(n/k) * k).

    The minimum matters as much as the maximum: the trough fleet is what meets the ramp, and 1/6 of a
    minimum of 2 would be rounded up to 6 instances in effect.
    """
    for k in range(max(1, math.floor(peak_rate / EVENTS_PER_S)), 1, -1):
        if math.ceil(hi / k) * k <= hi * 1.05 and math.ceil(lo / k) * k <= lo * 1.05:
            return float(k)
    return 1.0


def prepare(plan: Plan, curve: Curve, trace: Trace, options: ReplayOptions) -> tuple[Setup, float, float]:
    """The simulation's setup for `plan` on `trace`, the scale-down k and the plan's scale-out time."""
    scale_out_s = plan.scale_out_s if options.scale_out_s is None else options.scale_out_s
    if options.detection_lag_s > scale_out_s:
        raise ValueError(f"--detection-lag-s {options.detection_lag_s:g} is above the scale-out time "
                         f"{scale_out_s:g} s")
    peak = max(x for _, x in trace.points)
    rate = peak if plan.load == "request" else peak / options.turn_interval_s + peak / options.session_mean_s
    k = options.scale_down or auto_scale_down(rate, plan.policy.max_instances, plan.policy.min_instances)
    setup = Setup(load=plan.load, curve=curve, policy=scaled_policy(plan.policy, k, options),
                  scale_out_s=scale_out_s - options.detection_lag_s, detection_lag_s=options.detection_lag_s,
                  queue_bound=plan.queue_bound, trace=trace.scaled(k), window_s=options.window_s,
                  session_mean_s=options.session_mean_s, turn_interval_s=options.turn_interval_s, seed=options.seed)
    return setup, k, scale_out_s


def _watch(setup: Setup, slo_ms: float, stop_at_fail: bool, progress: Callable[[str], None] | None) -> Watch | None:
    """Stops the run once it surely fails (`stop_at_fail`), says how far it is every PROGRESS_EVERY_S."""
    fails = FailureWatch(setup, slo_ms) if stop_at_fail else None
    if fails is None and progress is None:
        return None
    started = last = time.monotonic()

    def watch(now: float, res: Result) -> bool:
        nonlocal last
        if progress is not None and time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            progress(f"    ... {now:.0f} of {setup.trace.duration_s:.0f} simulated s, {res.events / 1e6:.1f} M events, "
                     f"{last - started:.0f} s")
        return fails is not None and fails(now, res)

    return watch


def replay(plan: Plan, curve: Curve, trace: Trace, options: ReplayOptions, plan_name: str, *,
           stop_at_fail: bool = False, progress: Callable[[str], None] | None = None) -> Replay:
    """Simulate `plan` (its instances modelled by `curve`) on `trace`; the report says PASS or FAIL.

    `stop_at_fail`: end the run once its verdict is surely FAIL (:class:`FailureWatch`), for callers that
    need the verdict, not every window. `progress`: a line every PROGRESS_EVERY_S of wall time.
    """
    setup, k, scale_out_s = prepare(plan, curve, trace, options)
    result = simulate(setup, _watch(setup, plan.slo_ms, stop_at_fail, progress))
    meta = Meta(plan_name, curve.source, trace.name, plan.slo_ms, k, plan.price_per_hour, options.statistic)
    return Replay(setup, result, build(setup, result, meta), k, scale_out_s)
