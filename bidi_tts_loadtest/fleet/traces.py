"""Load traces for the fleet simulation: piecewise linear load over time, and Poisson arrivals that follow it.

Load is requests/s (request load) or concurrent sessions (session load). The built-in ``ramp-surge-trough``
holds the trough, ramps to the peak, holds, surges to ``surge`` x peak for a few minutes, comes back to the
peak, falls to the trough and holds it.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bidi_tts.fleet_plan import PlanFileError

BUILTIN = "ramp-surge-trough"
#: How long the surge's edges take (a step is not a load any real traffic makes).
SURGE_EDGE_S = 10.0


@dataclass(frozen=True, slots=True)
class Trace:
    points: tuple[tuple[float, float], ...]  # (t_s, load), t ascending from 0
    name: str
    surge_start_s: float | None  # where the declared surge window begins (None: no surge declared)

    @property
    def duration_s(self) -> float:
        return self.points[-1][0]

    def at(self, t: float) -> float:
        ts, loads = zip(*self.points, strict=True)
        return float(np.interp(t, ts, loads))

    def scaled(self, k: float) -> Trace:
        return Trace(tuple((t, x / k) for t, x in self.points), self.name, self.surge_start_s)


def ramp_surge_trough(peak: float, trough: float, surge: float, *, trough_s: float = 600, ramp_s: float = 3600,
                      hold_s: float = 600, surge_s: float = 180, fall_s: float = 1800) -> Trace:
    t = 0.0
    pts = [(t, trough)]
    for dt, load in ((trough_s, trough), (ramp_s, peak), (hold_s, peak)):
        t += dt
        pts.append((t, load))
    surge_start = t
    for dt, load in ((SURGE_EDGE_S, peak * surge), (surge_s, peak * surge), (SURGE_EDGE_S, peak),
                     (hold_s, peak), (fall_s, trough), (trough_s, trough)):
        t += dt
        pts.append((t, load))
    return Trace(tuple(pts), BUILTIN, surge_start)


def read_trace(path: Path, surge_start_s: float | None) -> Trace:
    """A FILE is ``[[t_s, load], ...]``, times ascending from 0, loads non-negative."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanFileError(f"--trace {path}: no such file (built-in: {BUILTIN})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise PlanFileError(f"--trace {path}: not a JSON list of [t_s, load]") from None
    ok = isinstance(rows, list) and len(rows) >= 2 and all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(v, int | float) and not isinstance(v, bool)
                                                     and math.isfinite(v) for v in r) for r in rows)
    if not ok:
        raise PlanFileError(f"--trace {path}: not a JSON list of at least two [t_s, load]")
    pts = tuple((float(t), float(x)) for t, x in rows)
    if pts[0][0] != 0 or any(b[0] <= a[0] for a, b in itertools.pairwise(pts)) or min(x for _, x in pts) < 0:
        raise PlanFileError(f"--trace {path}: times must start at 0 and increase; loads must be >= 0")
    return Trace(pts, str(path), surge_start_s)


def arrivals(rate_segments: list[tuple[float, float, float, float]], rng: np.random.Generator) -> np.ndarray:
    """Poisson arrival times for a rate linear on each segment (t0, t1, r0, r1), by time rescaling.

    Cumulative intensity is quadratic on each segment; unit-rate exponential gaps are mapped through its
    inverse, so a million arrivals cost a few numpy calls instead of a million thinning draws.
    """
    out = []
    segments = []
    for t0, t1, r0, r1 in rate_segments:
        if r0 * r1 < 0:  # the rate crosses zero inside: split there, so clipping at 0 stays linear
            tz = t0 + (t1 - t0) * r0 / (r0 - r1)
            segments += [(t0, tz, r0, 0.0), (tz, t1, 0.0, r1)]
        else:
            segments.append((t0, t1, r0, r1))
    for t0, t1, r0, r1 in segments:
        r0, r1 = max(r0, 0.0), max(r1, 0.0)
        dt = t1 - t0
        total = (r0 + r1) / 2 * dt
        if total <= 0:
            continue
        count = rng.poisson(total)
        # Given their count, Poisson arrivals are i.i.d. with density proportional to the rate.
        u = np.sort(rng.random(count)) * total
        a = (r1 - r0) / dt / 2  # Lambda(s) = a s^2 + r0 s on the segment
        if abs(a) < 1e-12:
            s = u / r0
        else:
            s = (-r0 + np.sqrt(np.maximum(r0 * r0 + 4 * a * u, 0.0))) / (2 * a)
        out.append(t0 + np.clip(s, 0.0, dt))
    return np.concatenate(out) if out else np.empty(0)


def request_rates(trace: Trace) -> list[tuple[float, float, float, float]]:
    return [(a[0], b[0], a[1], b[1]) for a, b in zip(trace.points, trace.points[1:], strict=False)]


def session_rates(trace: Trace, mean_duration_s: float) -> list[tuple[float, float, float, float]]:
    """Arrival rate that makes the concurrent count follow the trace: dN/dt = rate - N/D, so rate = N' + N/D.

    Where the trace falls faster than sessions end on their own (N' < -N/D) the rate is 0 and the count
    lags the trace; the report shows the simulated count beside the trace.
    """
    segs = []
    for (t0, x0), (t1, x1) in zip(trace.points, trace.points[1:], strict=False):
        slope = (x1 - x0) / (t1 - t0)
        segs.append((t0, t1, slope + x0 / mean_duration_s, slope + x1 / mean_duration_s))
    return segs
