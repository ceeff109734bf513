"""The fleet simulation's own input besides the plan: a closed-loop ladder result as the per-instance curve.

The plan itself, its curve and its policy are :mod:`bidi_tts.fleet_plan`'s, read there for the planner,
the simulation and the deploy tool alike; the ladder file is read by :mod:`bidi_tts_loadtest.ladder.result_file`,
the planner's reader too.
"""

from __future__ import annotations

from pathlib import Path

from bidi_tts.fleet_plan import Curve, PlanFileError
from bidi_tts_loadtest.ladder.result_file import LadderError, read_ladder_curve


def ladder_curve(path: Path) -> Curve:
    """The usable closed-loop rungs of a ladder result (``--ladder FILE``), or a one-line PlanFileError."""
    try:
        return read_ladder_curve(path)
    except LadderError as exc:
        raise PlanFileError(f"{path}: {exc}") from None
