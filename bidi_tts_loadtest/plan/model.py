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
from dataclasses import dataclass

import numpy as np

from bidi_tts.fleet_plan import MAX_LEVELS, Curve

TAIL = 1e-12  # a latency mixture stops where the levels left hold less probability than this


@dataclass(frozen=True)
class Occupancy:
    """The stationary chain at one arrival rate: P(n) for n <= head given, a geometric tail past it.

    Past the level where X(n) stops changing the chain is M/M/1-like, P(n) = P(head) r^(n - head) with
    r = lambda / X, so it is summed in closed form rather than walked (near saturation, r -> 1, the walk
    would be millions of levels).
    """

    lam: float
    head: tuple[float, ...]  # P(n in system), n = 0 .. len(head) - 1
    ratio: float  # r: P(n + 1) / P(n) past the head (0: no tail)

    def p(self, n: int) -> float:
        last = len(self.head) - 1
        return self.head[n] if n <= last else self.head[last] * self.ratio ** (n - last)

    def array(self, count: int) -> np.ndarray:
        """P(n) for n = 0 .. count - 1."""
        head = np.asarray(self.head[:count], dtype=float)
        if count <= len(self.head):
            return head
        steps = np.arange(1, count - len(self.head) + 1, dtype=float)
        return np.concatenate([head, self.head[-1] * self.ratio**steps])

    def negligible_from(self, share: float) -> int:
        """A count of levels past which the chain holds less than `share` of its probability."""
        last, r = len(self.head) - 1, self.ratio
        if r <= 0 or self.head[last] * r / (1 - r) < share:
            return last + 1
        return last + 1 + math.ceil(math.log(share * (1 - r) / self.head[last]) / math.log(r))

    @property
    def mean_in_system(self) -> float:
        last, r = len(self.head) - 1, self.ratio
        tail = self.head[last] * (last * r / (1 - r) + r / (1 - r) ** 2) if r > 0 else 0.0
        return sum(n * p for n, p in enumerate(self.head)) + tail

    @property
    def time_in_system_s(self) -> float:
        """W = L / lambda (Little)."""
        return self.mean_in_system / self.lam if self.lam > 0 else 0.0

    def in_system_quantile(self, q: float) -> int:
        total = 0.0
        for n, p in enumerate(self.head):
            total += p
            if total >= q:
                return n
        last, r = len(self.head) - 1, self.ratio
        if r <= 0:
            return last
        # cumulative after k tail levels: total + P(last) r (1 - r^k) / (1 - r) >= q
        need = 1 - (q - total) * (1 - r) / (self.head[last] * r)
        return last + (1 if need <= 0 else max(1, math.ceil(math.log(need) / math.log(r))))

    def at_least(self, n: float) -> float:
        """P(N >= n): the share of arrivals that find n or more in system (PASTA)."""
        last, r = len(self.head) - 1, self.ratio
        tail_from = math.ceil(n)
        if tail_from > last:
            return self.head[last] * r ** (tail_from - last) / (1 - r) if r > 0 else 0.0
        tail = self.head[last] * r / (1 - r) if r > 0 else 0.0
        return sum(self.head[max(tail_from, 0):]) + tail


def _flat_from(curve: Curve) -> int:
    """The whole level past which X(n) no longer changes: the tail of the chain starts there."""
    rungs = curve.rungs
    i = len(rungs) - 1
    while i > 0 and rungs[i - 1].rps == rungs[i].rps:
        i -= 1
    return max(1, math.ceil(rungs[i].level))


def occupancy(curve: Curve, lam: float) -> Occupancy:
    """P(n) of the birth-death chain with arrivals `lam` and departures X(n); `lam` below saturation."""
    if lam <= 0:
        return Occupancy(lam, (1.0,), 0.0)
    if lam >= curve.saturation_rps:
        raise ValueError(f"arrivals {lam} /s at or above saturation {curve.saturation_rps} /s: no steady state")
    levels = np.arange(1, _flat_from(curve) + 1, dtype=float)
    first = curve.rungs[0]
    xs = np.where(levels <= first.level, first.rps * levels / first.level,
                  np.interp(levels, [r.level for r in curve.rungs], [r.rps for r in curve.rungs]))
    terms = np.concatenate([[1.0], np.cumprod(lam / xs)])
    ratio = lam / curve.saturation_rps
    total = float(terms.sum()) + float(terms[-1]) * ratio / (1 - ratio)
    return Occupancy(lam, tuple(float(t) / total for t in terms), ratio)


def lor_mean_in_system(curve: Curve, lam: float, instances: int) -> float:
    """Requests in flight at an instance of a fleet of `instances` routed by least outstanding requests.

    The metric the policy tracks is read across a fleet that SageMaker routes LEAST_OUTSTANDING_REQUESTS,
    which pools the instances: a request waits only when every instance is busy. The chain is on the
    fleet's total m with the requests spread as evenly as routing can (m // N at each, one more at
    m % N of them), so it departs at (m % N) X(q + 1) + (N - m % N) X(q), q = m // N; arrivals N x lam.
    L per instance is its mean over N. One instance is the single-instance chain (`occupancy`).
    """
    if lam <= 0:
        return 0.0
    if lam >= curve.saturation_rps:
        raise ValueError(f"arrivals {lam} /s at or above saturation {curve.saturation_rps} /s: no steady state")
    flat = _flat_from(curve)
    top = instances * (flat + 1)
    levels = np.arange(0, flat + 2, dtype=float)
    first = curve.rungs[0]
    xs = np.where(levels <= first.level, first.rps * levels / first.level,
                  np.interp(levels, [r.level for r in curve.rungs], [r.rps for r in curve.rungs]))
    m = np.arange(1, top + 1)
    q, r = m // instances, m % instances
    deaths = r * xs[np.minimum(q + 1, flat + 1)] + (instances - r) * xs[np.minimum(q, flat + 1)]
    logs = np.concatenate([[0.0], np.cumsum(np.log(lam * instances / deaths))])
    logs -= logs.max()
    terms = np.exp(logs)
    ratio = lam / curve.saturation_rps  # past `top` every instance is on the flat part: geometric
    tail_p = terms[-1] * ratio / (1 - ratio)
    total = float(terms.sum()) + tail_p
    mean = float((np.arange(top + 1) * terms).sum()) + terms[-1] * (top * ratio / (1 - ratio)
                                                                    + ratio / (1 - ratio) ** 2)
    return mean / total / instances


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (absolute error under 1.5e-7), on arrays."""
    sign, a = np.sign(x), np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return np.asarray(sign * (1.0 - poly * np.exp(-a * a)))


def latency_cdf(curve: Curve, occ: Occupancy, at_ms: float) -> float:
    """P(an arrival's time to first audio <= at_ms): the mixture over what it finds in system."""
    count = min(max(curve.cut_level(at_ms), len(occ.head)), occ.negligible_from(TAIL), MAX_LEVELS)
    p = occ.array(count)
    p50, sigma = curve.latency_arrays(count)  # an arrival that finds n in system fares like level n + 1
    safe = np.where(sigma > 0, sigma, 1.0)
    phi = np.where(sigma > 0, 0.5 * (1.0 + _erf((at_ms - p50) / (safe * math.sqrt(2.0)))), p50 <= at_ms)
    return float(p @ phi)


def latency_p95_ms(curve: Curve, occ: Occupancy) -> float:
    hi = curve.latency_ms(occ.in_system_quantile(0.999) + 1)[1] + 1.0
    for _ in range(64):  # the mixture reaches 0.95 within a few doublings; the bound is for safety
        if latency_cdf(curve, occ, hi) >= 0.95:
            break
        hi *= 2
    lo = 0.0
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if latency_cdf(curve, occ, mid) >= 0.95 else (mid, hi)
    return hi


def lambda_star(curve: Curve, slo_ms: float, rel_tol: float = 1e-9) -> float:
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
