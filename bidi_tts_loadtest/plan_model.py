"""The fleet planner's arithmetic: from one instance's measured curve to a fleet and its scaling policy.

The rule: size from measured throughput and time in system, never from the uncontended service time.
An instance is a flow-equivalent server: with n requests in system it completes X(n) per second (the
ladder's achieved rps at level n, interpolated linearly, flat past the last rung). Open (Poisson)
arrivals at rate lambda make a birth-death chain, P(n) proportional to prod_k lambda / X(k). By PASTA an
arrival sees n in system with probability P(n), and a first-come server then treats it like a request of
the closed-loop ladder at level n + 1, so its time to first audio is drawn from that level's latency
(normal, median p50, spread from p95 - p50). lambda* is the largest lambda whose mixture p95 meets the SLO.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.6448536269514722  # the standard normal's 95th percentile
TAIL = 1e-12  # the chain is cut where a level's probability falls below this share of the total
MAX_LEVELS = 2_000_000  # bounds the chain's loop; lambda within 1e-6 of saturation reaches ~30,000


@dataclass(frozen=True)
class Rung:
    """One measured level: n in system, completions per second, time to first audio p50 / p95 (ms)."""

    level: float
    rps: float
    p50_ms: float
    p95_ms: float


class Curve:
    """An instance as a flow-equivalent server: throughput and latency as functions of the number in system."""

    def __init__(self, rungs: Sequence[Rung]) -> None:
        if not rungs:
            raise ValueError("a curve needs at least one rung")
        self.rungs = tuple(sorted(rungs, key=lambda r: r.level))
        self._last = self.rungs[-1]

    @classmethod
    def from_service(cls, q_max: float, rps: float, service_mean_ms: float, service_p95_ms: float) -> Curve:
        """The curve hand-given numbers imply: X(n) = min(n / S_mean, R); latency max(S_mean, n / R) at
        the median, plus (S_p95 - S_mean) at the p95 (the uncontended spread carried up unchanged)."""
        s = service_mean_ms / 1000.0
        spread = service_p95_ms - service_mean_ms
        knee = rps * s  # n at which n / S_mean reaches R
        levels = sorted({1.0, max(knee, 1.0), max(float(q_max), 1.0)})
        rungs = []
        for n in levels:
            median = max(service_mean_ms, n / rps * 1000.0)
            rungs.append(Rung(n, min(n / s, rps), median, median + spread))
        return cls(rungs)

    @property
    def saturation_rps(self) -> float:
        return self._last.rps

    def throughput(self, n: float) -> float:
        first = self.rungs[0]
        if n <= first.level:
            return first.rps * n / first.level
        return self._between(n, "rps", flat=True)

    def latency_ms(self, n: float) -> tuple[float, float]:
        """(p50, p95) time to first audio with n in system."""
        first, last = self.rungs[0], self._last
        if n <= first.level:
            return first.p50_ms, first.p95_ms
        if n >= last.level:  # each request more ahead of it adds one completion interval
            extra = (n - last.level) / last.rps * 1000.0
            return last.p50_ms + extra, last.p95_ms + extra
        return self._between(n, "p50_ms"), self._between(n, "p95_ms")

    def _between(self, n: float, field: str, flat: bool = False) -> float:
        last = self._last
        if n >= last.level:
            return float(getattr(last, field))
        for lo, hi in zip(self.rungs, self.rungs[1:], strict=False):
            if lo.level <= n <= hi.level:
                a, b = float(getattr(lo, field)), float(getattr(hi, field))
                return a + (b - a) * (n - lo.level) / (hi.level - lo.level)
        raise AssertionError("unreachable: n lies within the rungs")  # pragma: no cover

    def largest_level_within(self, slo_ms: float) -> int:
        """The largest whole n whose p95 meets `slo_ms` (0 when even one in system misses)."""
        n = 0
        while self.latency_ms(n + 1)[1] <= slo_ms:
            n += 1
            if n >= MAX_LEVELS:
                break
        return n


@dataclass(frozen=True)
class Occupancy:
    """The stationary chain at one arrival rate."""

    lam: float
    probabilities: tuple[float, ...]  # P(n in system), n = 0, 1, ...

    @property
    def mean_in_system(self) -> float:
        return sum(n * p for n, p in enumerate(self.probabilities))

    @property
    def time_in_system_s(self) -> float:
        """W = L / lambda (Little)."""
        return self.mean_in_system / self.lam if self.lam > 0 else 0.0

    def in_system_quantile(self, q: float) -> int:
        total = 0.0
        for n, p in enumerate(self.probabilities):
            total += p
            if total >= q:
                return n
        return len(self.probabilities) - 1

    def at_least(self, n: float) -> float:
        """P(N >= n): the share of arrivals that find n or more in system (PASTA)."""
        return sum(p for k, p in enumerate(self.probabilities) if k >= n)


def occupancy(curve: Curve, lam: float) -> Occupancy:
    """P(n) of the birth-death chain with arrivals `lam` and departures X(n); `lam` below saturation."""
    if lam <= 0:
        return Occupancy(lam, (1.0,))
    if lam >= curve.saturation_rps:
        raise ValueError(f"arrivals {lam} /s at or above saturation {curve.saturation_rps} /s: no steady state")
    terms = [1.0]
    total, term, n = 1.0, 1.0, 0
    last_level = curve.rungs[-1].level
    while n < MAX_LEVELS:
        n += 1
        term *= lam / curve.throughput(n)
        terms.append(term)
        total += term
        if n > last_level and term < TAIL * total:
            break
    return Occupancy(lam, tuple(t / total for t in terms))


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def latency_cdf(curve: Curve, occ: Occupancy, at_ms: float) -> float:
    """P(an arrival's time to first audio <= at_ms): the mixture over what it finds in system."""
    total = 0.0
    for n, p in enumerate(occ.probabilities):
        p50, p95 = curve.latency_ms(n + 1)
        sigma = (p95 - p50) / Z95
        total += p * (_phi((at_ms - p50) / sigma) if sigma > 0 else float(p50 <= at_ms))
    return total


def latency_p95_ms(curve: Curve, occ: Occupancy) -> float:
    lo, hi = 0.0, curve.latency_ms(len(occ.probabilities) + 1)[1] + 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if latency_cdf(curve, occ, mid) >= 0.95 else (mid, hi)
    return hi


def lambda_star(curve: Curve, slo_ms: float, rel_tol: float = 1e-6) -> float:
    """The largest arrival rate per instance whose p95 time to first audio meets `slo_ms` (0 if none)."""
    if curve.latency_ms(1)[1] > slo_ms:
        return 0.0
    lo, hi = 0.0, curve.saturation_rps
    while hi - lo > rel_tol * curve.saturation_rps:
        mid = (lo + hi) / 2
        if latency_cdf(curve, occupancy(curve, mid), slo_ms) >= 0.95:
            lo = mid
        else:
            hi = mid
    return lo


def clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def cooldowns(scale_out_s: float) -> tuple[int, int]:
    """(scale-out, scale-in) cooldowns from T, the time from a scale-out decision to serving capacity.

    Out: T/2 within [60, 300]. Target tracking counts capacity still launching as added, so a cooldown
    shorter than T does not double-add; 60 s is six 10-s metric periods, enough for one decision to show
    in the metric; above 300 s a second surge waits too long. In: at least T (and AWS's default 300 s):
    capacity removed takes T to get back, so removing faster than that risks a saw-tooth.
    """
    return math.ceil(clamp(scale_out_s / 2, 60, 300)), math.ceil(max(scale_out_s, 300.0))


def scale_in_level(target: float, survivors: int) -> float:
    """The per-instance level under which removing one of survivors + 1 instances keeps the rest at target."""
    return target * survivors / (survivors + 1)


def cost_per_million_chars(cost_per_hour: float, chars_per_hour: float) -> float | None:
    return None if chars_per_hour <= 0 else cost_per_hour / chars_per_hour * 1e6
