"""The planner checks its own plan: it replays it on a trace in the fleet simulation and raises the floor
(the standing minimum) until the plan passes, or says which input cannot be met.

A plan sized for the peak can still fail on the way there: from a low trough, a steep ramp outruns
target tracking, which adds capacity one activity at a time (docs/capacity.md, "Three runs"). The only
lever the planner holds is the floor, so it searches the smallest ``--min-floor`` between the printed
minimum and the maximum whose plan passes (the simulation's verdict is taken as monotone in the floor:
more standing instances never refuse more). Every candidate is the planner's own plan for that floor,
read back from its JSON the way ``python -m bidi_tts_loadtest.fleet_sim`` reads it. The search needs
verdicts, so a run stops once its FAIL is certain (a refusal, or a finished window's p95 above the SLO,
outside the surge window); a try that passes is simulated to the trace's end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bidi_tts.fleet_plan import plan_from_json
from bidi_tts_loadtest.fleet.replay import ReplayOptions, replay
from bidi_tts_loadtest.fleet.traces import BUILTIN, Trace, ramp_surge_trough, read_trace

#: --trace NONE: plan only, as before the planner simulated.
NO_TRACE = "none"


@dataclass(slots=True)
class Verdict:
    min_instances: int
    verdict: str  # PASS | FAIL
    failing_windows: int
    worst_p95_ms: float | None  # outside the surge window
    refused: float
    settled_at_s: float | None = None  # a FAIL certain here stopped the run (None: the whole trace simulated)


@dataclass(slots=True)
class SelfCheck:
    trace: str
    printed_min: int
    verdicts: list[Verdict] = field(default_factory=list)
    passing_min: int | None = None  # None: not even a floor at the maximum passes
    why_not: str | None = None  # when nothing passes (or nothing could be simulated): which input

    def as_dict(self) -> dict[str, Any]:
        return {"trace": self.trace, "printed_min_instances": self.printed_min,
                "passing_min_instances": self.passing_min, "why_not": self.why_not,
                "tries": [{"min_instances": v.min_instances, "verdict": v.verdict,
                           "failing_windows": v.failing_windows, "worst_p95_ms": v.worst_p95_ms,
                           "refused": v.refused, "settled_at_s": v.settled_at_s} for v in self.verdicts]}


def trace_for(name: str, plan_json: dict[str, Any], surge_start_s: float | None) -> Trace:
    """The built-in ramp, surge and fall at the plan's peak, trough and surge, or a JSON file's trace."""
    if name == BUILTIN:
        return ramp_surge_trough(float(plan_json["peak"]), float(plan_json["trough"]), float(plan_json["surge"]))
    return read_trace(Path(name), surge_start_s)


def _judge(plan_json: dict[str, Any], trace: Trace, options: ReplayOptions,
           progress: Callable[[str], None]) -> Verdict:
    plan = plan_from_json(plan_json, "the planner's plan")
    assert plan.curve is not None
    report = replay(plan, plan.curve, trace, options, "the planner's plan", stop_at_fail=True,
                    progress=progress).report
    outside = [w["p95_ttfa_ms"] for w in report["windows"] if not w["in_surge_window"]
               and w["p95_ttfa_ms"] is not None]
    return Verdict(plan.policy.min_instances, report["verdict"], len(report["failing_windows"]),
                   max(outside) if outside else None, float(report["totals"]["refused"]), report["settled_at_s"])


def self_check(plan_for_floor: Callable[[int], dict[str, Any]], printed: dict[str, Any], trace: Trace,
               options: ReplayOptions, progress: Callable[[str], None]) -> SelfCheck:
    """Simulate the printed plan; when it fails, search the smallest floor whose plan passes."""
    lo, hi = printed["min_instances"], printed["max_instances"]
    check = SelfCheck(trace.name, lo)
    if (printed.get("per_instance") or {}).get("curve") is None:
        check.why_not = ("no per-instance curve to simulate (a hand-given session capacity): give --ladder FILE "
                         "to check the plan")
        return check

    def judge(floor: int) -> Verdict:
        progress(f"  simulating min {floor}...")
        verdict = _judge(printed if floor == lo else plan_for_floor(floor), trace, options, progress)
        check.verdicts.append(verdict)
        settled = "" if verdict.settled_at_s is None else f" (certain at {verdict.settled_at_s:.0f} s; stopped there)"
        progress(f"  simulated min {floor}: {verdict.verdict}{settled}")
        return verdict

    if judge(lo).verdict == "PASS":
        check.passing_min = lo
        return check
    if lo >= hi or judge(hi).verdict != "PASS":
        check.why_not = (f"even {hi} standing instances (the maximum) fail on this trace: the peak sizing or the "
                         "SLO cannot be met as given; re-measure the instance, relax --slo-ms, or plan for a "
                         "higher --surge")
        return check
    passing, failing = hi, lo
    while passing - failing > 1:
        mid = (passing + failing) // 2
        if judge(mid).verdict == "PASS":
            passing = mid
        else:
            failing = mid
    check.passing_min = passing
    return check
