"""Whether a case that failed only on silence failed for the container's pace, not for its clause.

The silence a case allows comes from the calibration at the start of the run. When the container, or
the machine under it, gets slower afterwards, a case that waited out that silence would blame its
clause for pace (issue 32: the sample's proxies on a loaded 2-core machine, about 30 cases "nothing
arrived for 2.0 s", while a session a minute later got its audio in 6 s). So such a failure is not
final until one 'Hi.' probe, right after it, says how fast the container is now:

- no audio for the probe either: the container answers nothing now; the failure stands;
- prompt against the run's baseline (:func:`calibration.is_prompt`): the container is as quick as at the
  start, and it is this case it does not answer; the failure stands, at the cost of one probe;
- slower: the run measures the container again and the case runs once more with the larger silence
  (which the later cases keep); the retry's verdict stands and says why it was retried.

One probe decides, not the best of several: a loaded machine is quick now and then (a run against the
sample's chatterbox proxy, paused 8.8 s in every 11.8, got one prompt probe in three and would have let
the failure stand). A slow probe that was only the case's own unfinished work costs a retry, and the
retry of a case the container does not answer fails again, on its clause. The probe is timed from
before its session opens: a stalled container stalls the handshake first (the same run's probes, timed
from their 'Hi.', were prompt though the handshake had waited out the stall).

Bounded: one retry per case, :data:`MAX_RECALIBRATIONS` per run; past that, a failure on a container
that is slow again is NOT-JUDGED (its pace is the likelier cause, and the run cannot re-measure again).
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass

from bidi_tts_conformance.calibration import (
    CEILING_S,
    FIRST_ANSWER_S,
    Calibration,
    calibrate,
    is_prompt,
    probe_ttfa,
    silence_for,
)
from bidi_tts_conformance.targets import Target

MAX_RECALIBRATIONS = 3
PROBE_FLOOR_S = 10.0  # a probe on a slowed container gets this long at least (5x the silence allowed, if more)


def probe_budget(silence: float) -> float:
    return min(CEILING_S, max(PROBE_FLOOR_S, 5 * silence))


@dataclass(frozen=True, slots=True)
class PaceProbe:
    """The 'Hi.' probe after a failure on silence, against the run's baseline."""

    ttfa_s: float | None  # None: no audio within `budget_s`
    baseline_s: float
    budget_s: float

    @property
    def slowed(self) -> bool:
        return self.ttfa_s is not None and not is_prompt(self.ttfa_s, self.baseline_s)

    def said(self) -> str:
        if self.ttfa_s is None:
            return f"a 'Hi.' probe after it got no audio in {self.budget_s:.0f} s either"
        return (f"a 'Hi.' probe after it got its first audio in {_ms(self.ttfa_s)} ms (its session's "
                f"opening included) against {_ms(self.baseline_s)} ms at the start of the run")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}" if seconds < 0.01 else f"{seconds * 1000:.0f}"


def probe_pace(target: Target, voice: str, sample_rate: int, baseline_s: float, silence: float) -> PaceProbe:
    budget = probe_budget(silence)
    return PaceProbe(asyncio.run(probe_ttfa(target, voice, sample_rate, budget, from_open=True)), baseline_s, budget)


def why_it_stands(probe: PaceProbe) -> str:
    """The note a failure that stands gets: the probe rules out pace as the cause."""
    if probe.ttfa_s is None:
        return f"{probe.said()}: the container answers nothing now, which no larger silence would change"
    return f"{probe.said()}: the container is as quick as at the start, so its pace is not the cause"


def recalibrate(target: Target, voice: str, sample_rate: int, before: Calibration, probe: PaceProbe,
                silence_now: float) -> Calibration | None:
    """A new measurement on the slowed container, never allowing less silence than before nor than the
    probe's own first audio needs; None when the container gave nothing to measure."""
    assert probe.ttfa_s is not None
    wait = min(FIRST_ANSWER_S, max(PROBE_FLOOR_S, 5 * probe.ttfa_s))
    again = asyncio.run(calibrate(target, voice, sample_rate, first_answer_s=wait))
    if again.probe_ttfa_s is None:
        return None
    silence = min(CEILING_S, max(silence_now, again.silence, silence_for(probe.ttfa_s)))
    # The quiet check between cases compares with this baseline: the container's pace now as re-measured
    # (not the probe's, which the case's own unfinished work may have slowed), never quicker than the start's.
    baseline = max(again.probe_ttfa_s, before.probe_ttfa_s or 0.0)
    return dataclasses.replace(again, silence=silence, probe_ttfa_s=baseline,
                               end_silence=_larger(before.end_silence, again.end_silence),
                               end_silence_one=_larger(before.end_silence_one, again.end_silence_one))


def _larger(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def retry_note(first_detail: str, probe: PaceProbe, silence_before: float, silence_now: float) -> str:
    first = first_detail if len(first_detail) <= 200 else first_detail[:200] + "..."
    return (f"retried once: the first try got no frame within the silence allowed ({first}); {probe.said()}, "
            f"so the container had slowed: recalibrated, silence allowed now {silence_now:.1f} s "
            f"(was {silence_before:.1f} s)")


def spent_note(first_detail: str, probe: PaceProbe, spent: int) -> str:
    return (f"not judged: no frame came within the silence allowed ({first_detail}), and {probe.said()}: "
            f"the container had slowed again and the run's {spent} recalibrations are spent, so "
            f"its pace, not the clause, may be the cause")
