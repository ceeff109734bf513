"""One model of a fleet: an instance's curve, the scaling policy, and the plan that joins them.

The fleet planner (``python -m bidi_tts_loadtest.plan``) writes a plan file; the fleet simulation
(``python -m bidi_tts_loadtest.fleet_sim``) replays it and the deploy tool's ``up --plan`` registers its
policy. All three read it with :func:`read_plan` / :func:`read_policy` here, so a key means the same thing
everywhere and nobody translates. It lives on the floor (``bidi_tts``) because the deploy tool may import
nothing of the load tools.

- :class:`Curve`: ONE instance measured under a closed loop: at each level (requests in system, or
  sessions held) the throughput it achieved and the p50 / p95 time to first audio; read as a
  flow-equivalent server (throughput and latency as functions of the number in system).
- :class:`Policy`: what Application Auto Scaling is given: the instance range, target tracking's target
  on concurrent requests per instance, the scale-in step's level, the cooldowns, and the alarms' shape.
- :class:`Plan`: a policy with what it was sized for (load kind, SLO, surge, scale-out time, peak, trough,
  queue bound, price, instance type), the curve, and the STOP findings that say it cannot hold.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

Load = Literal["request", "session"]
Statistic = Literal["Maximum", "Average"]
Z95 = 1.6448536269514722  # the standard normal's 95th percentile
MAX_LEVELS = 10_000_000  # a bound on every walk over levels (the SLO x R levels a mixture needs are far fewer)
#: The policy keys of a plan file, the ones the deploy tool registers.
POLICY_KEYS = ("min_instances", "max_instances", "target_value", "scale_in_value",
               "scale_out_cooldown_s", "scale_in_cooldown_s")


class PlanFileError(ValueError):
    """A plan, curve or policy that cannot be used; the message is one line for people."""


@dataclass(frozen=True, slots=True)
class Rung:
    """One measured level: n in system, completions per second, time to first audio p50 / p95 (ms)."""

    level: float
    rps: float
    p50_ms: float
    p95_ms: float


class Curve:
    """An instance as a flow-equivalent server: throughput and latency as functions of the number in system."""

    def __init__(self, rungs: Sequence[Rung], source: str = "") -> None:
        if not rungs:
            raise ValueError("a curve needs at least one rung")
        self.rungs = tuple(sorted(rungs, key=lambda r: r.level))
        self.source = source  # where it came from, printed in every report that uses it
        self._last = self.rungs[-1]
        self.max_sigma_ms = max(r.p95_ms - r.p50_ms for r in self.rungs) / Z95

    @classmethod
    def from_service(cls, q_max: float, rps: float, service_mean_ms: float, service_p95_ms: float) -> Curve:
        """The curve hand-given numbers imply: X(n) = min(n / S_mean, R); latency max(S_mean, n / R) at
        the median, plus (S_p95 - S_mean) at the p95 (the uncontended spread carried up unchanged)."""
        s = service_mean_ms / 1000.0
        spread = service_p95_ms - service_mean_ms
        knee = rps * s  # n at which n / S_mean reaches R
        levels = sorted({1.0, max(knee, 1.0), max(float(q_max), 1.0)})
        rungs = []
        for n in levels:
            median = max(service_mean_ms, n / rps * 1000.0)
            rungs.append(Rung(n, min(n / s, rps), median, median + spread))
        return cls(rungs, f"hand-given: Q_max {q_max:g}, {rps:g} rps, service {service_mean_ms:g} / "
                          f"{service_p95_ms:g} ms (curve assumed)")

    def rows(self) -> list[list[float]]:
        """``[[level, rps, p50_ms, p95_ms], ...]``: the plan file's ``per_instance.curve``."""
        return [[r.level, r.rps, r.p50_ms, r.p95_ms] for r in self.rungs]

    @property
    def saturation_rps(self) -> float:
        return self._last.rps

    def throughput(self, n: float) -> float:
        first = self.rungs[0]
        if n <= first.level:
            return first.rps * n / first.level
        return self._between(n, "rps", flat=True)

    def latency_ms(self, n: float) -> tuple[float, float]:
        """(p50, p95) time to first audio with n in system."""
        first, last = self.rungs[0], self._last
        if n <= first.level:
            return first.p50_ms, first.p95_ms
        if n >= last.level:  # each request more ahead of it adds one completion interval
            extra = (n - last.level) / last.rps * 1000.0
            return last.p50_ms + extra, last.p95_ms + extra
        return self._between(n, "p50_ms"), self._between(n, "p95_ms")

    def _between(self, n: float, field: str, flat: bool = False) -> float:
        last = self._last
        if n >= last.level:
            return float(getattr(last, field))
        for lo, hi in zip(self.rungs, self.rungs[1:], strict=False):
            if lo.level <= n <= hi.level:
                a, b = float(getattr(lo, field)), float(getattr(hi, field))
                return a + (b - a) * (n - lo.level) / (hi.level - lo.level)
        raise AssertionError("unreachable: n lies within the rungs")  # pragma: no cover

    def latency_arrays(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(p50, sigma) in ms at levels 1 .. count, as :meth:`latency_ms` gives them, for a whole chain at once."""
        levels = np.arange(1, count + 1, dtype=float)
        xs = [r.level for r in self.rungs]
        extra = np.maximum(levels - self._last.level, 0.0) / self._last.rps * 1000.0
        p50 = np.interp(levels, xs, [r.p50_ms for r in self.rungs]) + extra
        p95 = np.interp(levels, xs, [r.p95_ms for r in self.rungs]) + extra
        return p50, (p95 - p50) / Z95

    def cut_level(self, at_ms: float) -> int:
        """A level from which on every median lies 8 sigma above `at_ms`: levels past it add nothing."""
        bar = at_ms + 8 * self.max_sigma_ms
        below = [i for i, r in enumerate(self.rungs) if r.p50_ms <= bar]
        if not below:
            return 1
        k = below[-1]
        if k + 1 < len(self.rungs):  # every later rung is above the bar: cut where the segment crosses it
            lo, hi = self.rungs[k], self.rungs[k + 1]
            cross = lo.level + (bar - lo.p50_ms) / (hi.p50_ms - lo.p50_ms) * (hi.level - lo.level)
            return math.ceil(cross) + 1
        last = self._last
        return math.ceil(last.level + (bar - last.p50_ms) * last.rps / 1000.0) + 2

    def largest_level_within(self, slo_ms: float) -> int:
        """The largest whole n whose p95 meets `slo_ms` (0 when even one in system misses)."""
        n = 0
        while self.latency_ms(n + 1)[1] <= slo_ms:
            n += 1
            if n >= MAX_LEVELS:
                break
        return n


def parse_curve(rows: Any, source: str) -> Curve:
    """``[[level, rps, ttfa_p50_ms, ttfa_p95_ms], ...]`` (a plan's ``per_instance.curve``), checked."""
    if not isinstance(rows, list) or not rows:
        raise PlanFileError(f"{source}: the curve must be a non-empty list of [level, rps, p50_ms, p95_ms]")
    rungs = []
    for i, row in enumerate(rows):
        if (not isinstance(row, list | tuple) or len(row) != 4
                or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in row)):
            raise PlanFileError(f"{source}: curve row {i} is not [level, rps, p50_ms, p95_ms] numbers")
        level, rps, p50, p95 = (float(v) for v in row)
        if level <= 0 or rps <= 0 or p50 <= 0 or p95 < p50:
            raise PlanFileError(f"{source}: curve row {i} needs level, rps, p50 > 0 and p95 >= p50")
        rungs.append(Rung(level, rps, p50, p95))
    if len({r.level for r in rungs}) != len(rungs):
        raise PlanFileError(f"{source}: the curve repeats a level")
    return Curve(rungs, source)


@dataclass(frozen=True, slots=True)
class Policy:
    """The scaling policy: target tracking out, one step in, and the alarms' shape (60 s x 3 to scale in)."""

    min_instances: int
    max_instances: int
    target_value: float
    scale_in_value: float
    scale_out_cooldown_s: float = 60
    scale_in_cooldown_s: float = 300
    statistic: Statistic = "Maximum"  # the scale-out datapoint over its period (the simulation's choice)
    period_s: float = 10.0  # SageMaker's high-resolution concurrency metric
    alarm_points: int = 3
    scale_in_period_s: float = 60.0
    scale_in_periods: int = 3


@dataclass(frozen=True, slots=True)
class Plan:
    """A policy and what it was sized for: the part of the planner's JSON the other tools act on."""

    policy: Policy
    load: Load
    slo_ms: float
    surge: float
    scale_out_s: float
    price_per_hour: float
    queue_bound: int | None
    peak: float
    trough: float
    instance_type: str
    curve: Curve | None
    source: str
    stops: tuple[str, ...] = ()  # the STOP findings, "name: detail"


def json_number(data: dict[str, Any], key: str, where: str, *, default: float | None = None,
            positive: bool = False) -> float:
    value = data.get(key)
    if value is None:
        if default is None and key not in data:
            raise PlanFileError(f"{where}: '{key}' is missing (a plan the planner writes with --json has it)")
        if default is None:
            raise PlanFileError(f"{where}: '{key}' is null (a plan with a STOP finding: see its findings)")
        value = default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PlanFileError(f"{where}: '{key}' must be a number (got {value!r})")
    if value < 0 or (positive and value == 0):
        raise PlanFileError(f"{where}: '{key}' must be {'positive' if positive else 'non-negative'} (got {value})")
    return float(value)


def read_json(path: Path) -> Any:
    """A JSON file, or :class:`PlanFileError` saying in one line why it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanFileError(f"{path}: cannot be read ({type(exc).__name__})") from None
    except json.JSONDecodeError as exc:
        raise PlanFileError(f"{path}: not valid JSON (line {exc.lineno})") from None


def read_policy(data: dict[str, Any], where: str, *, defaults: bool = True) -> Policy:
    """The policy keys of a plan (:data:`POLICY_KEYS`); min above max is an error. With `defaults`, a
    missing scale-in value or cooldown reads as 0 (hand-written plans); without, every key is required."""
    zero = 0.0 if defaults else None
    lo = int(json_number(data, "min_instances", where))
    hi = int(json_number(data, "max_instances", where, positive=True))
    if lo > hi:
        raise PlanFileError(f"{where}: min_instances {lo} is above max_instances {hi}")
    return Policy(
        min_instances=lo, max_instances=hi,
        target_value=json_number(data, "target_value", where, positive=True),
        scale_in_value=json_number(data, "scale_in_value", where, default=zero),
        scale_out_cooldown_s=json_number(data, "scale_out_cooldown_s", where, default=zero),
        scale_in_cooldown_s=json_number(data, "scale_in_cooldown_s", where, default=zero))


def plan_stops(data: dict[str, Any], where: str) -> tuple[str, ...]:
    """The plan's STOP findings as "name: detail" lines (a plan that would not hold its SLO)."""
    findings = data.get("findings", [])
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        raise PlanFileError(f"{where}: 'findings' must be a list of objects")
    return tuple(f"{f.get('name', '?')}: {f.get('detail', '')}".strip() for f in findings
                 if str(f.get("level", "")).upper() == "STOP")


def _origin(source: Any) -> str:
    """Where the plan's curve came from, short: the planner writes a dict, a hand-written plan a sentence."""
    if isinstance(source, dict):
        ladder = source.get("ladder")
        if isinstance(ladder, dict) and ladder.get("path"):
            return f" (ladder {ladder['path']}, {ladder.get('load')} load, {ladder.get('loop')} loop)"
        return f" ({source.get('capacity', 'hand-given')}, curve assumed)" if source.get("curve_assumed") else ""
    return f" ({source})" if source else ""


def plan_from_json(data: Any, where: str) -> Plan:
    """The plan in a decoded plan file (what the planner's ``--json`` writes)."""
    if not isinstance(data, dict):
        raise PlanFileError(f"{where}: a plan is a JSON object")
    load = data.get("load", "request")
    if load not in ("request", "session"):
        raise PlanFileError(f"{where}: 'load' must be \"request\" or \"session\" (got {load!r})")
    per = data.get("per_instance") or {}
    if not isinstance(per, dict):
        raise PlanFileError(f"{where}: 'per_instance' must be an object")
    curve = parse_curve(per["curve"], f"plan {where}" + _origin(data.get("source"))) \
        if per.get("curve") is not None else None
    bound = data.get("queue_bound")
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 1):
        raise PlanFileError(f"{where}: 'queue_bound' must be a positive integer or null (got {bound!r})")
    policy = read_policy(data, where)
    peak = json_number(data, "peak", where, positive=True)
    trough = json_number(data, "trough", where)
    if trough > peak:
        raise PlanFileError(f"{where}: trough {trough} is above peak {peak}")
    price = data.get("price_per_hour")
    if price is None and data.get("cost_per_hour_peak") is not None:
        price = json_number(data, "cost_per_hour_peak", where) / policy.max_instances
    return Plan(
        policy=policy, load=load, slo_ms=json_number(data, "slo_ms", where, positive=True),
        surge=json_number(data, "surge", where, default=1.25, positive=True),
        scale_out_s=json_number(data, "scale_out_s", where),
        price_per_hour=json_number({"p": price}, "p", f"{where}: price_per_hour", default=0.0),
        queue_bound=bound, peak=peak, trough=trough,
        instance_type=str(data.get("instance_type", "unknown")), curve=curve,
        source=str(data.get("source", "")), stops=plan_stops(data, where))


def read_plan(path: Path) -> Plan:
    """A plan file (the planner's ``--json``)."""
    return plan_from_json(read_json(path), str(path))
