"""The SLO's verdict on a configuration: how many sessions it *held*.

A step holds n sessions when, at n, p95 TTFA is under the SLO and no turn underran or failed
(:meth:`StepResult.holds`); a configuration's *held* figure is the largest n it held, with any smaller
count that missed named beside it (``32 (missed 8)``).
"""

from __future__ import annotations

from bidi_tts_loadtest.capacity.step import StepResult


def held(steps: list[StepResult], slo_ms: float) -> int:
    """The largest session count at which the SLO held (0: none did), whatever smaller counts did.

    Not "count up and stop at the first miss": on a shared machine one step's outlier at a small
    count (a p95 of 50-100 messages is their 3rd-5th largest value) would then hide every larger
    count that held. Whether the smaller counts held too is :func:`missed_below`'s answer, shown
    beside it (:func:`held_cell`)."""
    return max((s.sessions for s in steps if s.holds(slo_ms)), default=0)


def missed_below(steps: list[StepResult], slo_ms: float) -> list[int]:
    """The session counts below :func:`held`'s that missed the SLO (sorted; [] when all held)."""
    best = held(steps, slo_ms)
    return sorted({s.sessions for s in steps if s.sessions < best and not s.holds(slo_ms)})


def held_cell(steps: list[StepResult], slo_ms: float) -> str:
    """`32` when every measured count up to 32 held; `32 (missed 8)` when a smaller one did not."""
    best, missed = held(steps, slo_ms), missed_below(steps, slo_ms)
    return f"{best} (missed {', '.join(map(str, missed))})" if missed else str(best)
