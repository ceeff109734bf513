"""Read a ladder result of the load tool (``"kind": "bidi-tts-ladder"``): for the fleet planner
(:func:`read_ladder`, everything sizing needs) and for the fleet simulation (:func:`read_ladder_curve`,
the instance's curve). One reader, so the two read the same rungs the same way.

Defensive by design: the planner sizes a fleet from this file, so a file that is not a ladder, or one
that lacks what sizing needs, is a :class:`LadderError` (one line, exit 4), never a guess.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bidi_tts.fleet_plan import Curve, Rung


class LadderError(ValueError):
    """The file is not a ladder result the planner can size from."""


@dataclass(frozen=True)
class Ladder:
    path: str
    load: str  # "request" | "session"
    loop: str  # "closed" | "open"
    slo_ms: float | None
    rungs: tuple[Rung, ...]  # one per level, the runs' medians where several ran
    runs: int
    q_max: float
    q_max_per_run: tuple[float, ...]
    bracketed: bool
    rps_at_q_max: float | None
    service_mean_ms: float | None
    service_p95_ms: float | None
    chars_per_request: float | None
    chars_per_session_s: float | None

    @property
    def curve(self) -> Curve:
        return Curve(self.rungs, f"ladder {self.path} ({self.load} load, {self.loop} loop)")


def _number(value: Any, what: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise LadderError(f"{what} is not a number ({value!r})")
    if positive and value <= 0:
        raise LadderError(f"{what} must be > 0 ({value!r})")
    return float(value)


def _optional(value: Any, what: str) -> float | None:
    return None if value is None else _number(value, what)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _rungs(raw: Any, loop: str) -> tuple[tuple[Rung, ...], int]:
    if not isinstance(raw, list) or not raw:
        raise LadderError("'rungs' is not a non-empty list")
    by_level: dict[float, list[tuple[float, float, float]]] = {}
    runs: set[Any] = set()
    for i, rung in enumerate(raw):
        if not isinstance(rung, dict):
            raise LadderError(f"rungs[{i}] is not an object")
        if rung.get("usable") is False or rung.get("completed") == 0:
            continue
        ttfa = rung.get("ttfa_ms")
        if not isinstance(ttfa, dict):
            raise LadderError(f"rungs[{i}].ttfa_ms is not an object")
        # Under open loop the level is an offered rate: the flow-equivalent server wants the number in system.
        where = "concurrency_mean" if loop == "open" else "level"
        level = _number(rung.get(where), f"rungs[{i}].{where}", positive=True)
        rps = _number(rung.get("achieved_rps"), f"rungs[{i}].achieved_rps", positive=True)
        p50 = _number(ttfa.get("p50"), f"rungs[{i}].ttfa_ms.p50")
        p95 = _number(ttfa.get("p95"), f"rungs[{i}].ttfa_ms.p95")
        if p95 < p50:
            raise LadderError(f"rungs[{i}]: ttfa p95 {p95} < p50 {p50}")
        by_level.setdefault(level, []).append((rps, p50, p95))
        runs.add(rung.get("run", 0))
    if not by_level:
        raise LadderError("no usable rung")
    rungs = tuple(Rung(level, _median([r[0] for r in rows]), _median([r[1] for r in rows]),
                       _median([r[2] for r in rows])) for level, rows in sorted(by_level.items()))
    return rungs, len(runs)


def _kind(data: Any) -> tuple[str, str]:
    """(load, loop) of a ladder result, or :class:`LadderError` when `data` is none."""
    if not isinstance(data, dict) or data.get("kind") != "bidi-tts-ladder":
        raise LadderError("not a ladder result (no \"kind\": \"bidi-tts-ladder\")")
    if data.get("version") != 1:
        raise LadderError(f"ladder version {data.get('version')!r} is not 1")
    load, loop = data.get("load"), data.get("loop", "closed")
    if load not in ("request", "session"):
        raise LadderError(f"load {load!r} is neither 'request' nor 'session'")
    if loop not in ("closed", "open"):
        raise LadderError(f"loop {loop!r} is neither 'closed' nor 'open'")
    return str(load), str(loop)


def parse_ladder(data: Any, path: str = "<ladder>") -> Ladder:
    """The ladder in `data` (a decoded JSON document), or :class:`LadderError` saying what is wrong."""
    load, loop = _kind(data)
    result = data.get("result")
    if not isinstance(result, dict):
        raise LadderError("'result' is not an object")
    if result.get("q_max") is None:
        raise LadderError("its Q_max is null: no level met the SLO, so there is no capacity to plan with")
    q_max = _number(result["q_max"], "result.q_max", positive=True)
    raw_settings = data.get("settings")
    settings: dict[str, Any] = raw_settings if isinstance(raw_settings, dict) else {}
    rungs, runs = _rungs(data.get("rungs"), str(loop))
    per_run = result.get("q_max_per_run") or [q_max]
    if not isinstance(per_run, list):
        raise LadderError("result.q_max_per_run is not a list")
    return Ladder(
        path=path, load=load, loop=loop, slo_ms=_optional(settings.get("slo_ms"), "settings.slo_ms"),
        rungs=rungs, runs=max(runs, len(per_run)), q_max=q_max,
        q_max_per_run=tuple(_number(v, "result.q_max_per_run[]") for v in per_run if v is not None),
        bracketed=result.get("bracketed") is True,
        rps_at_q_max=_optional(result.get("rps_at_q_max"), "result.rps_at_q_max"),
        service_mean_ms=_optional(result.get("service_mean_ms"), "result.service_mean_ms"),
        service_p95_ms=_optional(result.get("service_p95_ms"), "result.service_p95_ms"),
        chars_per_request=_optional(result.get("chars_per_request"), "result.chars_per_request"),
        chars_per_session_s=_optional(result.get("chars_per_session_s"), "result.chars_per_session_s"),
    )


def _read(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LadderError(f"cannot read it ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LadderError(f"not JSON ({exc})") from None


def read_ladder(path: str | Path) -> Ladder:
    """Everything the planner sizes from; its Q_max must be measured."""
    return parse_ladder(_read(path), str(path))


def read_ladder_curve(path: str | Path) -> Curve:
    """The instance's curve from a closed-loop ladder (its Q_max is not needed): the fleet simulation's."""
    data = _read(path)
    load, loop = _kind(data)
    if loop != "closed":
        raise LadderError("an open-loop ladder cannot build the instance model (needs loop=closed)")
    rungs, _ = _rungs(data.get("rungs"), loop)
    return Curve(rungs, f"ladder {path} ({load} load, {loop} loop)")
