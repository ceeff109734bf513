"""One step of the capacity sweep in numbers: each turn's sample, and one configuration at one session count.

Pure arithmetic on what a step measured (no clock, no I/O): TTFA percentiles per turn or per message,
the underruns of a player that plays a whole turn from its first frame (a stall over 50 ms counts),
the scheduler's decisions during the step (its stats file holds running totals), and the listeners'
demand against what the container made:

- *demand*: the audio seconds per wall second that n LLM-paced listeners consume (each hears a turn of
  A seconds, then pauses, then waits TTFA for the next: n·A/(TTFA+A+pause));
- *capacity (busy)*: what the container makes while its workers synthesize (audio seconds per synthesis
  second, times the workers). When demand at the SLO exceeds it, no order of the work can hold n sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bidi_tts.metrics import percentile
from bidi_tts_loadtest.core.session_loop import TurnSample

SCHED_KEYS = ("picks", "contested", "differed", "depth_sum", "audio_s", "synth_s")


def sched_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The scheduler's counts during one step (its file holds running totals); {} when unknown."""
    if not after:
        return {}
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in SCHED_KEYS}
    delta["workers"] = after.get("workers", 1)
    # A running maximum: it is this step's when it grew during the step, else an upper bound of it.
    delta["depth_max"] = after.get("depth_max", 0)
    delta["depth_max_grew"] = float(after.get("depth_max", 0) > before.get("depth_max", 0))
    return delta


def listener_demand(sessions: int, turn_audio_s: float, pause_s: float, ttfa_s: float) -> float:
    """Audio seconds per wall second that `sessions` LLM-paced listeners consume: each turn of
    `turn_audio_s` seconds is heard after `ttfa_s`, then the listener pauses `pause_s`."""
    cycle = ttfa_s + turn_audio_s + pause_s
    return sessions * turn_audio_s / cycle if cycle > 0 else 0.0


@dataclass(slots=True)
class StepResult:
    """One configuration at one session count."""

    config: str
    sessions: int
    wall_s: float
    turns: list[TurnSample] = field(default_factory=list)
    load_before: float = 0.0
    load_after: float = 0.0
    sched: dict[str, float] = field(default_factory=dict)  # sched_delta over the step
    pause_s: float = 1.0
    # what ttfa_ms measures: "turn" (from the LLM's first token), "message" (each from its send) or
    # "first" (each turn's first message from its send)
    basis: str = "turn"

    def ttfa_ms(self, q: float) -> float | None:
        if self.basis == "message":
            return self.message_ttfa_ms(q)
        if self.basis == "first":
            firsts = [t.message_ttfa_s[0] * 1000 for t in self.turns if t.message_ttfa_s]
            return percentile(firsts, q) if firsts else None
        values = [t.ttfa_s * 1000 for t in self.turns if t.ttfa_s is not None]
        return percentile(values, q) if values else None

    def ttfa_audible_ms(self, q: float) -> float | None:
        values = [t.ttfa_audible_s * 1000 for t in self.turns if t.ttfa_audible_s is not None]
        return percentile(values, q) if values else None

    def message_ttfa_ms(self, q: float) -> float | None:
        values = [v * 1000 for t in self.turns for v in t.message_ttfa_s]
        return percentile(values, q) if values else None

    @property
    def underruns(self) -> int:
        return sum(t.underruns for t in self.turns)

    @property
    def errors(self) -> int:
        return sum(t.errors for t in self.turns)

    @property
    def audio_per_wall_s(self) -> float:
        return sum(t.audio_s for t in self.turns) / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def turn_audio_s(self) -> float:
        """Mean audio seconds per turn that produced audio."""
        audio = [t.audio_s for t in self.turns if t.audio_s > 0]
        return sum(audio) / len(audio) if audio else 0.0

    def demand(self, ttfa_s: float) -> float:
        return listener_demand(self.sessions, self.turn_audio_s, self.pause_s, ttfa_s)

    @property
    def busy(self) -> float | None:
        """Share of the workers' time spent synthesizing."""
        sched = self.sched
        if not sched or self.wall_s <= 0:
            return None
        return sched["synth_s"] / (self.wall_s * sched["workers"])

    @property
    def capacity(self) -> float | None:
        """Audio seconds per wall second the container makes with every worker busy."""
        sched = self.sched
        if not sched or sched["synth_s"] <= 0:
            return None
        return sched["audio_s"] / sched["synth_s"] * sched["workers"]

    def decisions(self) -> str:
        """`picks, contested %, differed %, depth mean/max` of the step, or '-'."""
        sched = self.sched
        picks = sched.get("picks", 0) if sched else 0
        if not picks:
            return "-"
        return (f"{picks:.0f} / {100 * sched['contested'] / picks:.0f}% / "
                f"{100 * sched['differed'] / picks:.0f}% / {sched['depth_sum'] / picks:.1f} "
                f"({'' if sched.get('depth_max_grew') else '<='}{sched['depth_max']:.0f})")

    def holds(self, slo_ms: float) -> bool:
        p95 = self.ttfa_ms(95)
        return bool(self.turns) and p95 is not None and p95 <= slo_ms and not self.underruns and not self.errors
