"""The fleet simulation's own input besides the plan: a closed-loop ladder result as the per-instance curve.

The plan itself, its curve and its policy are :mod:`bidi_tts.fleet_plan`'s, read there for the planner,
the simulation and the deploy tool alike.
"""

from __future__ import annotations

from pathlib import Path

from bidi_tts.fleet_plan import Curve, PlanFileError, json_number, parse_curve, read_json


def read_ladder(path: Path) -> Curve:
    """A ladder result of the load tool (``"kind": "bidi-tts-ladder"``): its usable closed-loop rungs."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("kind") != "bidi-tts-ladder":
        raise PlanFileError(f"{path}: not a ladder result (no \"kind\": \"bidi-tts-ladder\")")
    if data.get("loop", "closed") != "closed":
        raise PlanFileError(f"{path}: an open-loop ladder cannot build the instance model (needs loop=closed)")
    rungs = data.get("rungs")
    if not isinstance(rungs, list):
        raise PlanFileError(f"{path}: 'rungs' must be a list")
    rows = []
    for i, rung in enumerate(rungs):
        if not isinstance(rung, dict) or not isinstance(rung.get("ttfa_ms"), dict):
            raise PlanFileError(f"{path}: rung {i} has no ttfa_ms")
        if not rung.get("completed") or rung.get("usable") is False:
            continue
        where = f"{path}: rung {i}"
        rows.append([json_number(rung, "level", where, positive=True), json_number(rung, "achieved_rps", where),
                     json_number(rung["ttfa_ms"], "p50", where), json_number(rung["ttfa_ms"], "p95", where)])
    return parse_curve(rows, f"ladder {path}")
