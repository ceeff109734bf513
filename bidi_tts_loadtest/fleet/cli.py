"""``python -m bidi_tts_loadtest.fleet_sim``: check a fleet plan against load traces in a simulation.

Exit 0 when the plan passes, 1 when it fails, 4 on bad input (one line), 70 when the run fails.
docs/capacity.md ("Simulate the fleet") describes the model, its assumptions and its validation.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from bidi_tts.fleet_plan import PlanFileError, read_plan
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.fleet.inputs import ladder_curve
from bidi_tts_loadtest.fleet.replay import DETECTION_LAG_S, ReplayOptions, prepare, replay
from bidi_tts_loadtest.fleet.report import plot, text
from bidi_tts_loadtest.fleet.traces import BUILTIN, Trace, ramp_surge_trough, read_trace


def _parser() -> exit_codes.Parser:
    p = exit_codes.Parser(prog="python -m bidi_tts_loadtest.fleet_sim",
                          description="Simulate a fleet plan (discrete events) against a load trace; "
                                      "a simulation, not a measurement.")
    p.add_argument("--plan", required=True, type=Path, help="the planner's plan JSON")
    p.add_argument("--ladder", type=Path, help="a closed-loop ladder result: the per-instance curve "
                                               "(default: the plan's per_instance.curve)")
    p.add_argument("--trace", default=BUILTIN, help=f"{BUILTIN} (built-in) or a JSON file [[t_s, load], ...]")
    p.add_argument("--surge-start-s", type=float, help="a FILE trace's surge start (default: none declared)")
    for name, default in (("trough", 600), ("ramp", 3600), ("hold", 600), ("surge", 180), ("fall", 1800)):
        p.add_argument(f"--{name}-s", type=float, default=default, help=f"{BUILTIN}: {name} duration (s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--window-s", type=float, default=60.0, help="the p95 window (s)")
    p.add_argument("--statistic", choices=("Maximum", "Average"), default="Maximum",
                   help="the scale-out datapoint's statistic over its 10 s")
    p.add_argument("--alarm-points", type=int, default=3, help="datapoints above target before a scale-out")
    p.add_argument("--scale-in-periods", type=int, default=3, help="low periods before a scale-in")
    p.add_argument("--scale-in-period-s", type=float, default=60.0)
    p.add_argument("--session-mean-s", type=float, default=180.0, help="session load: mean session duration")
    p.add_argument("--turn-interval-s", type=float, default=10.0, help="session load: mean time between turns")
    p.add_argument("--scale-out-s", type=float, help="override the plan's scale_out_s (detection lag included)")
    p.add_argument("--detection-lag-s", type=float, default=DETECTION_LAG_S,
                   help="the part of scale_out_s that is the alarm's detection, which the simulation models "
                        f"itself; new instances serve scale_out_s minus this after the decision "
                        f"(default {DETECTION_LAG_S:g}, the sample's split of its 320 s)")
    p.add_argument("--scale-down", type=float, help="simulate 1/K of the fleet (default: chosen for speed)")
    p.add_argument("--json", type=Path, help="write the report here")
    p.add_argument("--plot", type=Path, help="write a PNG here")
    return p


def _positive(p: exit_codes.Parser, **values: float | None) -> None:
    for name, v in values.items():
        if v is not None and not (math.isfinite(v) and v > 0):
            p.error(f"--{name.replace('_', '-')} must be a positive number (got {v})")


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    a = p.parse_args(argv)
    _positive(p, window_s=a.window_s, session_mean_s=a.session_mean_s, turn_interval_s=a.turn_interval_s,
              scale_down=a.scale_down, trough_s=a.trough_s, ramp_s=a.ramp_s, hold_s=a.hold_s, surge_s=a.surge_s,
              fall_s=a.fall_s, scale_in_period_s=a.scale_in_period_s)
    for name, v in (("scale-out-s", a.scale_out_s), ("detection-lag-s", a.detection_lag_s)):
        if v is not None and not (math.isfinite(v) and v >= 0):
            p.error(f"--{name} must be a non-negative number (got {v})")
    if a.seed < 0:
        p.error(f"--seed must be a non-negative integer (got {a.seed})")
    if a.alarm_points < 1 or a.scale_in_periods < 1:
        p.error("--alarm-points and --scale-in-periods must be at least 1")
    try:
        plan = read_plan(a.plan)
        curve = ladder_curve(a.ladder) if a.ladder else plan.curve
        if curve is None:
            raise PlanFileError(f"{a.plan}: no per_instance.curve; give --ladder FILE")
        if a.trace == BUILTIN:
            trace: Trace = ramp_surge_trough(plan.peak, plan.trough, plan.surge, trough_s=a.trough_s,
                                             ramp_s=a.ramp_s, hold_s=a.hold_s, surge_s=a.surge_s, fall_s=a.fall_s)
        else:
            trace = read_trace(Path(a.trace), a.surge_start_s)
    except PlanFileError as exc:
        p.error(str(exc))
    options = ReplayOptions(
        statistic="Maximum" if a.statistic == "Maximum" else "Average", alarm_points=a.alarm_points,
        scale_in_periods=a.scale_in_periods, scale_in_period_s=a.scale_in_period_s, window_s=a.window_s,
        session_mean_s=a.session_mean_s, turn_interval_s=a.turn_interval_s, scale_out_s=a.scale_out_s,
        detection_lag_s=a.detection_lag_s, scale_down=a.scale_down, seed=a.seed)
    try:
        setup, k, scale_out_s = prepare(plan, curve, trace, options)
    except ValueError as exc:
        p.error(str(exc))
    print(f"fleet simulation: {trace.duration_s:.0f} s of {plan.load} load, 1/{k:g} of the fleet "
          f"(min {setup.policy.min_instances} x {k:g}, max {setup.policy.max_instances} x {k:g})...",
          file=sys.stderr, flush=True)
    print(f"  new instances serve {setup.scale_out_s:g} s after a scale-out decision (scale-out time "
          f"{scale_out_s:g} s less {a.detection_lag_s:g} s of detection lag, which the simulated alarm models "
          "itself); one scaling activity at a time", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        done = replay(plan, curve, trace, options, str(a.plan))
        result, report = done.result, done.report
        if a.json:
            a.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
        if a.plot:
            plot(report, a.plot)
    except (OSError, ValueError, MemoryError) as exc:
        print(f"fleet_sim: the run failed: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)
        return exit_codes.RUN_FAILED
    print(f"  {result.events} events in {time.monotonic() - started:.1f} s", file=sys.stderr)
    print(text(report))
    return exit_codes.OK if report["verdict"] == "PASS" else exit_codes.BROKEN


if __name__ == "__main__":
    sys.exit(main())
