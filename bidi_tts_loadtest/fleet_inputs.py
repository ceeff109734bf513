"""The fleet simulation's inputs: a plan (the planner's JSON) and a per-instance curve (the plan's or a ladder's).

A curve is the measured behaviour of ONE instance under a closed loop: at each level (clients in the loop,
or sessions held) the throughput it achieved and the p50/p95 time to first audio. Everything the fleet
simulation knows about an instance comes from it; the plan supplies the fleet's thresholds and price.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Load = Literal["request", "session"]


class FleetInputError(Exception):
    """An input the simulation cannot use; the message is one line for people."""


@dataclass(frozen=True, slots=True)
class CurvePoint:
    level: float          # clients in the closed loop (request load) or sessions held (session load)
    achieved_rps: float
    ttfa_p50_ms: float
    ttfa_p95_ms: float


@dataclass(frozen=True, slots=True)
class Curve:
    points: tuple[CurvePoint, ...]  # by level, ascending
    source: str                     # where it came from, printed in every report


@dataclass(frozen=True, slots=True)
class Plan:
    min_instances: int
    max_instances: int
    target_value: float
    scale_in_value: float
    scale_out_cooldown_s: float
    scale_in_cooldown_s: float
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


def _number(data: dict[str, Any], key: str, where: str, *, default: float | None = None,
            positive: bool = False) -> float:
    value = data.get(key)
    if value is None:
        if default is None and key not in data:
            raise FleetInputError(f"{where}: '{key}' is missing (a plan the planner writes with --json has it)")
        if default is None:
            raise FleetInputError(f"{where}: '{key}' is null (a plan with a STOP finding: see its findings)")
        value = default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FleetInputError(f"{where}: '{key}' must be a number (got {value!r})")
    if value < 0 or (positive and value == 0):
        raise FleetInputError(f"{where}: '{key}' must be {'positive' if positive else 'non-negative'} (got {value})")
    return float(value)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FleetInputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FleetInputError(f"{path}: cannot be read ({type(exc).__name__})") from None
    except json.JSONDecodeError as exc:
        raise FleetInputError(f"{path}: not valid JSON (line {exc.lineno})") from None


def parse_curve(rows: Any, source: str) -> Curve:
    """``[[level, achieved_rps, ttfa_p50_ms, ttfa_p95_ms], ...]`` (the plan's ``per_instance.curve``)."""
    if not isinstance(rows, list) or not rows:
        raise FleetInputError(f"{source}: the curve must be a non-empty list of [level, rps, p50_ms, p95_ms]")
    points = []
    for i, row in enumerate(rows):
        if (not isinstance(row, list | tuple) or len(row) != 4
                or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in row)):
            raise FleetInputError(f"{source}: curve row {i} is not [level, rps, p50_ms, p95_ms] numbers")
        level, rps, p50, p95 = (float(v) for v in row)
        if level <= 0 or rps <= 0 or p50 <= 0 or p95 < p50:
            raise FleetInputError(f"{source}: curve row {i} needs level, rps, p50 > 0 and p95 >= p50")
        points.append(CurvePoint(level, rps, p50, p95))
    points.sort(key=lambda p: p.level)
    if len({p.level for p in points}) != len(points):
        raise FleetInputError(f"{source}: the curve repeats a level")
    return Curve(tuple(points), source)


def read_ladder(path: Path) -> Curve:
    """A ladder result of the load tool (``"kind": "bidi-tts-ladder"``): its usable closed-loop rungs."""
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("kind") != "bidi-tts-ladder":
        raise FleetInputError(f"{path}: not a ladder result (no \"kind\": \"bidi-tts-ladder\")")
    if data.get("loop", "closed") != "closed":
        raise FleetInputError(f"{path}: an open-loop ladder cannot build the instance model (needs loop=closed)")
    rungs = data.get("rungs")
    if not isinstance(rungs, list):
        raise FleetInputError(f"{path}: 'rungs' must be a list")
    rows = []
    for i, rung in enumerate(rungs):
        if not isinstance(rung, dict) or not isinstance(rung.get("ttfa_ms"), dict):
            raise FleetInputError(f"{path}: rung {i} has no ttfa_ms")
        if not rung.get("completed") or rung.get("usable") is False:
            continue
        where = f"{path}: rung {i}"
        rows.append([_number(rung, "level", where, positive=True), _number(rung, "achieved_rps", where),
                     _number(rung["ttfa_ms"], "p50", where), _number(rung["ttfa_ms"], "p95", where)])
    return parse_curve(rows, f"ladder {path}")


def _origin(source: Any) -> str:
    """Where the plan's curve came from, short: the planner writes a dict, a hand-written plan a sentence."""
    if isinstance(source, dict):
        ladder = source.get("ladder")
        if isinstance(ladder, dict) and ladder.get("path"):
            return f" (ladder {ladder['path']}, {ladder.get('load')} load, {ladder.get('loop')} loop)"
        return f" ({source.get('capacity', 'hand-given')}, curve assumed)" if source.get("curve_assumed") else ""
    return f" ({source})" if source else ""


def read_plan(path: Path) -> Plan:
    data = _read_json(path)
    where = str(path)
    if not isinstance(data, dict):
        raise FleetInputError(f"{where}: a plan is a JSON object")
    load = data.get("load", "request")
    if load not in ("request", "session"):
        raise FleetInputError(f"{where}: 'load' must be \"request\" or \"session\" (got {load!r})")
    per = data.get("per_instance") or {}
    if not isinstance(per, dict):
        raise FleetInputError(f"{where}: 'per_instance' must be an object")
    curve = parse_curve(per["curve"], f"plan {path}" + _origin(data.get("source"))) \
        if per.get("curve") is not None else None
    bound = data.get("queue_bound")
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 1):
        raise FleetInputError(f"{where}: 'queue_bound' must be a positive integer or null (got {bound!r})")
    lo = int(_number(data, "min_instances", where))
    hi = int(_number(data, "max_instances", where, positive=True))
    if lo > hi:
        raise FleetInputError(f"{where}: min_instances {lo} is above max_instances {hi}")
    peak = _number(data, "peak", where, positive=True)
    trough = _number(data, "trough", where)
    if trough > peak:
        raise FleetInputError(f"{where}: trough {trough} is above peak {peak}")
    price = data.get("price_per_hour")
    if price is None and data.get("cost_per_hour_peak") is not None:
        price = _number(data, "cost_per_hour_peak", where) / hi
    return Plan(
        min_instances=lo, max_instances=hi,
        target_value=_number(data, "target_value", where, positive=True),
        scale_in_value=_number(data, "scale_in_value", where, default=0.0),
        scale_out_cooldown_s=_number(data, "scale_out_cooldown_s", where, default=0.0),
        scale_in_cooldown_s=_number(data, "scale_in_cooldown_s", where, default=0.0),
        load=load, slo_ms=_number(data, "slo_ms", where, positive=True),
        surge=_number(data, "surge", where, default=1.25, positive=True),
        scale_out_s=_number(data, "scale_out_s", where),
        price_per_hour=_number({"p": price}, "p", f"{where}: price_per_hour", default=0.0),
        queue_bound=bound, peak=peak, trough=trough,
        instance_type=str(data.get("instance_type", "unknown")), curve=curve,
        source=str(data.get("source", "")),
    )
