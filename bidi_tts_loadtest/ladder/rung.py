"""One rung of a ladder in numbers: what was measured in its window, and whether the rung can be used.

Pure arithmetic on what a rung's loop collected (no clock, no I/O). A *sample* is one request (request
load) or one conversation turn (session load); a *span* is what the level counts as in flight: a
request from its send to its last byte, or a session from its open to its close. Only samples sent in
the measured window (the last ``measure_s`` of the hold) count; the concurrency is the time-average
of the spans open in that window, the throughput what finished in it.

A rung is *unusable* when its numbers describe the client rather than the target, or a target that
failed rather than one that was slow:
- errors or refusals (each counted);
- a request with no first byte by the end of the drain that is younger than the SLO then (its TTFA
  is unknown: the drain was too short). One older than the SLO is known to miss it and counts in
  the TTFA percentiles at its age, a lower bound;
- closed loop: fewer than 0.95 N in flight on average, or a client that takes long between a
  response and its next send (p95 over ``max(GAP_FLOOR_MS, GAP_SHARE x the median completion)``);
- open loop: arrivals behind their Poisson schedule (p95 lag of a send against its scheduled time
  over ``max_lag_ms``), or arrivals never sent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bidi_tts.metrics import percentile

#: The sample's rule (aws-samples tts-bench): a closed rung whose client kept fewer than 0.95 N busy is thrown out.
MIN_IN_FLIGHT_SHARE = 0.95
#: A closed-loop client's time between a response and its next send is "large" above the larger of these.
GAP_FLOOR_MS = 10.0
GAP_SHARE = 0.05
DEFAULT_MAX_LAG_MS = 20.0
STAT_KEYS = ("mean", "p50", "p90", "p95", "p99", "max")


@dataclass(slots=True)
class Sample:
    """One request or one turn. Times are ``time.perf_counter()`` values; the loop that sends fills them."""

    sent_at: float
    scheduled_at: float | None = None  # open loop: when the schedule wanted it sent
    first_at: float | None = None  # first audio byte
    done_at: float | None = None  # last byte (or the failure)
    error: str | None = None  # a short word: "http 500", "connection", "no audio"
    refused: bool = False  # the target said busy / throttled (HTTP 503, 429)
    chars: int = 0
    audio_s: float = 0.0
    underruns: int = 0
    gap_s: float | None = None  # closed loop: from the client's previous result to this send


@dataclass(slots=True)
class Collected:
    """What one rung's loop gathered: its samples, its spans, and its clock marks."""

    loop: str  # "closed" | "open"
    level: float
    started_at: float
    stop_at: float  # end of the hold: nothing new is sent after it
    measure_s: float
    ended_at: float  # after the drain
    samples: list[Sample] = field(default_factory=list)
    spans: list[Sample] = field(default_factory=list)
    unsent: int = 0  # open loop: arrivals of the window that were never sent
    scheduled: int = 0  # open loop: arrivals the schedule put in the window

    @property
    def window(self) -> tuple[float, float]:
        return self.stop_at - self.measure_s, self.stop_at


def stats_ms(values_s: list[float]) -> dict[str, float | None]:
    """mean, p50, p90, p95, p99, max in milliseconds (exact percentiles); None each when there is nothing."""
    if not values_s:
        return dict.fromkeys(STAT_KEYS)
    ms = sorted(v * 1000 for v in values_s)
    out: dict[str, float | None] = {"mean": math.fsum(ms) / len(ms)}
    for key in ("p50", "p90", "p95", "p99"):
        out[key] = percentile(ms, float(key[1:]), presorted=True)
    out["max"] = ms[-1]
    return out


def concurrency_mean(spans: list[Sample], start: float, end: float, now: float) -> float:
    """Time-average number of spans open in [start, end); a span still open counts to `now`."""
    if end <= start:
        return 0.0
    busy = 0.0
    for span in spans:
        closes = span.done_at if span.done_at is not None else now
        busy += max(0.0, min(end, closes) - max(start, span.sent_at))
    return busy / (end - start)


def measured(collected: Collected) -> list[Sample]:
    start, end = collected.window
    return [s for s in collected.samples if start <= s.sent_at < end]


def rung(collected: Collected, *, run: int, unit: str, slo_ms: float, load: str,
         max_lag_ms: float = DEFAULT_MAX_LAG_MS) -> dict[str, Any]:
    """The rung's JSON entry (docs/capacity.md, "Ladders"): its numbers and its verdicts."""
    samples = measured(collected)
    start, end = collected.window
    good = [s for s in samples if s.error is None and s.done_at is not None]
    errors = sum(1 for s in samples if s.error is not None and not s.refused)
    refused = sum(1 for s in samples if s.refused)
    # No first byte by the end of the drain: its TTFA is at least its age then. Older than the SLO, it
    # is known to miss and counts at that age (a lower bound); younger, nobody knows: the drain was short.
    waiting = [collected.ended_at - s.sent_at for s in samples
               if s.error is None and s.first_at is None and s.done_at is None]
    unknown = sum(1 for age in waiting if age * 1000 <= slo_ms)
    ttfa = stats_ms([s.first_at - s.sent_at for s in samples if s.error is None and s.first_at is not None]
                    + [age for age in waiting if age * 1000 > slo_ms])
    complete = stats_ms([s.done_at - s.sent_at for s in good if s.done_at is not None])
    # Throughput: what finished inside the window, whenever it was sent.
    finished = sum(1 for s in collected.samples if s.error is None and s.done_at is not None
                   and start <= s.done_at < end)
    in_flight = concurrency_mean(collected.spans, start, end, collected.ended_at)
    spans = [s for s in collected.spans if start <= s.sent_at < end]
    if collected.loop == "closed":
        lags = [s.gap_s for s in spans if s.gap_s is not None]
    else:
        lags = [s.sent_at - s.scheduled_at for s in spans if s.scheduled_at is not None]
    lag_p95 = percentile([v * 1000 for v in lags], 95) if lags else None
    underruns = sum(s.underruns for s in good)
    p95 = ttfa["p95"]
    meets = p95 is not None and p95 <= slo_ms and (load != "session" or underruns == 0)
    why = unusable_reason(collected, samples=len(samples), good=len(good), errors=errors, refused=refused,
                          unknown=unknown, drain_s=collected.ended_at - collected.stop_at,
                          in_flight=in_flight, lag_p95_ms=lag_p95, complete_p50_ms=complete["p50"],
                          max_lag_ms=max_lag_ms)
    return {
        "run": run, "level": collected.level, "unit": unit,
        "sent": len(samples), "completed": len(good), "errors": errors, "refused": refused,
        "unfinished": len(waiting), "unsent": collected.unsent, "scheduled": collected.scheduled,
        "offered_rps": collected.scheduled / collected.measure_s if collected.loop == "open" else None,
        "achieved_rps": finished / collected.measure_s,
        "concurrency_mean": in_flight,
        "ttfa_ms": ttfa, "complete_ms": complete,
        "underruns": underruns,
        "chars": sum(s.chars for s in good),
        "audio_s": math.fsum(s.audio_s for s in good),
        "meets_slo": meets, "usable": why is None, "unusable_reason": why,
        "client_lag_ms_p95": lag_p95,
        "window_s": collected.measure_s,
    }


def unusable_reason(collected: Collected, *, samples: int, good: int, errors: int, refused: int, in_flight: float,
                    lag_p95_ms: float | None, complete_p50_ms: float | None, unknown: int = 0, drain_s: float = 0.0,
                    max_lag_ms: float = DEFAULT_MAX_LAG_MS) -> str | None:
    """Why the rung cannot count (one line), or None when it can."""
    reasons: list[str] = []
    if not good:
        reasons.append(f"nothing completed in the {collected.measure_s:g} s window ({samples} sent)")
    if errors or refused:
        reasons.append(f"{errors} errors, {refused} refused")
    if unknown:
        reasons.append(f"{unknown} without a first byte after a {drain_s:.1f} s drain, younger than the SLO: "
                       "lengthen --drain-s")
    if collected.loop == "closed":
        floor = MIN_IN_FLIGHT_SHARE * collected.level
        if in_flight < floor:
            reasons.append(f"client the limit: {in_flight:.2f} in flight on average, under "
                           f"{MIN_IN_FLIGHT_SHARE:g} x {collected.level:g}")
        limit = max(GAP_FLOOR_MS, GAP_SHARE * (complete_p50_ms or 0.0))
        if lag_p95_ms is not None and lag_p95_ms > limit:
            reasons.append(f"client the limit: p95 {lag_p95_ms:.1f} ms between a response and the next send "
                           f"(over {limit:.1f})")
    else:
        if collected.unsent:
            reasons.append(f"arrivals behind schedule: {collected.unsent} never sent")
        if lag_p95_ms is not None and lag_p95_ms > max_lag_ms:
            reasons.append(f"arrivals behind schedule: p95 lag {lag_p95_ms:.1f} ms (over {max_lag_ms:g})")
    return "; ".join(reasons) or None
