"""A run over time, in equal intervals: TTFA percentiles, active users, audio produced, underruns.

Locust's own charts show requests per second and response times over the run; these are the same
view for the numbers a voice agent cares about. The recorder's samples carry their wall time, so
every interval is computed from the exact samples that fell in it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bidi_tts.metrics import LatencyRecorder, percentile

#: Series the plugin records for these charts (not part of the summary).
ACTIVE_USERS = "active_users"  # Locust's user count, sampled each second; a user holds at most one session
AUDIO_S = "audio_s"  # seconds of audio each completed message carried, at the time it completed
BYTES_PER_AUDIO_S = 48_000  # s16le mono at the contract's default 24 kHz


@dataclass
class OverTime:
    """Per-interval values; `starts` are seconds from the run's start."""

    interval_s: float
    starts: list[float] = field(default_factory=list)
    ttfa_p50: list[float] = field(default_factory=list)
    ttfa_p95: list[float] = field(default_factory=list)
    ttfa_max: list[float] = field(default_factory=list)
    active_users: list[float] = field(default_factory=list)
    audio_s_per_s: list[float] = field(default_factory=list)
    underruns: list[int] = field(default_factory=list)


def pick_interval(duration_s: float, points: int = 60) -> float:
    """About `points` intervals over the run, each a whole number of seconds (at least one)."""
    return float(max(1, math.ceil(duration_s / points)))


def over_time(recorder: LatencyRecorder, started: float, ended: float, interval_s: float | None = None,
              *, ttfa: str = "ttfa_ms", underruns: str = "underruns") -> OverTime:
    """Bucket the run [started, ended) into equal intervals (NaN where an interval has no TTFA)."""
    duration = max(ended - started, 1e-9)
    step = interval_s or pick_interval(duration)
    out = OverTime(interval_s=step)
    n = max(1, math.ceil(duration / step))
    for i in range(n):
        lo, hi = started + i * step, started + (i + 1) * step
        window = {"since": lo, "until": hi}
        out.starts.append(i * step)
        ttfas = recorder.values(ttfa, **window)
        out.ttfa_p50.append(percentile(ttfas, 50) if ttfas else math.nan)
        out.ttfa_p95.append(percentile(ttfas, 95) if ttfas else math.nan)
        out.ttfa_max.append(max(ttfas) if ttfas else math.nan)
        users = recorder.values(ACTIVE_USERS, **window)
        out.active_users.append(max(users) if users else math.nan)
        out.audio_s_per_s.append(recorder.total(AUDIO_S, **window) / step)
        out.underruns.append(int(recorder.total(underruns, **window)))
    return out
