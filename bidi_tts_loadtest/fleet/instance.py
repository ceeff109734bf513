"""One instance of the fleet simulation, built from its measured closed-loop curve (a simulation, not a measurement).

Request load: a flow-equivalent server. Under a closed loop of n clients the instance completed X(n)
requests/s; the model serves its requests FIFO and, with n in the instance, completes work at X(n) per
second (X interpolated between the rungs, linear from the origin below the first, flat beyond the
last). TTFA is the time to the end of the request's service plus a fixed delay d that holds no
server: exact for a whole-message container (its first audio leaves when synthesis ends); for a
streaming one it is an upper bound, and its curve should be measured whole-message.

The delay d: a one-client rung's cycle 1 / X(1) is the server's time per request (1 / X at the top
rung, where the server never idles) plus what the server does not spend on it (HTTP, the client's
turnaround). Counting that part as service made an instance look busier than it is under open
arrivals (validated in docs/capacity.md: +40% at half load), so d = 1 / X(1) - 1 / X(top), X(1) is
raised to X(top) (what the server does with one request inside), and each request's work (mean 1)
takes the log-normal spread of the one-client TTFA less d. Without a one-client rung, d = 0 and the
lowest rung's spread is used.

By construction a closed loop at N clients replays the ladder: n stays N, throughput X(N), and by
Little's law the mean latency is N / X(N), what the rung measured (tests/loadtest/test_fleet_instance.py).

Session load: a session's turn TTFA is drawn from a log-normal fitted to the p50/p95 measured at the
instance's current session count (interpolated between levels); above the largest level it is
extrapolated along the last two levels and flagged as overload.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from bidi_tts.fleet_plan import Curve

Z95 = 1.6448536269514722  # the standard normal's 95th percentile


def spread_sigma(p50: float, p95: float) -> float:
    """The log-normal sigma whose p95/p50 is the given ratio."""
    return math.log(p95 / p50) / Z95 if p95 > p50 else 0.0


def overhead_s(curve: Curve) -> float:
    """d: the part of a one-client cycle the server's saturated throughput does not explain (s)."""
    low, top = curve.rungs[0], max(curve.rungs, key=lambda p: p.rps)
    if low.level != 1 or top is low:
        return 0.0
    return max(0.0, 1 / low.rps - 1 / top.rps)


def throughput_table(curve: Curve, n_max: int) -> list[float]:
    """X[n] for n = 0..n_max (requests/s with n requests in the instance's server)."""
    levels = [0.0] + [p.level for p in curve.rungs]
    rps = [0.0] + [p.rps for p in curve.rungs]
    if overhead_s(curve) > 0:
        rps[1] = 1 / (1 / rps[1] - overhead_s(curve))
    return [float(v) for v in np.interp(np.arange(n_max + 1), levels, rps)]


def work_draws(curve: Curve, count: int, rng: np.random.Generator) -> np.ndarray:
    """Each request's work, mean 1, with the one-client service time's spread (TTFA less d)."""
    low = curve.rungs[0]
    d_ms = overhead_s(curve) * 1000
    p50, p95 = low.p50_ms - d_ms, low.p95_ms - d_ms
    sigma = spread_sigma(p50, p95) if p50 > 0 else spread_sigma(low.p50_ms, low.p95_ms)
    return rng.lognormal(-sigma * sigma / 2, sigma, count) if sigma > 0 else np.ones(count)


class FlowServer:
    """FIFO; with n requests inside, the head's remaining work drains at X(n) per second."""

    __slots__ = ("head_left", "last", "queue", "t_last", "version", "x")

    def __init__(self, x: list[float]) -> None:
        self.x = x
        self.last = len(x) - 1
        self.queue: deque[float] = deque()  # arrival times; the works ride in `works`
        self.head_left = 0.0
        self.t_last = 0.0
        self.version = 0

    def _rate(self) -> float:
        return self.x[min(len(self.queue), self.last)]

    def _advance(self, now: float) -> None:
        if self.queue:
            self.head_left -= self._rate() * (now - self.t_last)
        self.t_last = now

    def admit(self, now: float, work: float, works: deque[float]) -> float:
        """A request arrives now; returns when the head completes (the caller schedules it)."""
        queue, x, last = self.queue, self.x, self.last
        n = len(queue)
        if n:  # _advance(now), inline: this runs once a simulated request
            self.head_left -= x[n if n < last else last] * (now - self.t_last)
        else:
            self.head_left = work
        self.t_last = now
        queue.append(now)
        works.append(work)
        self.version += 1
        n += 1
        return now + max(self.head_left, 0.0) / x[n if n < last else last]

    def due(self) -> float:
        return self.t_last + max(self.head_left, 0.0) / self._rate()

    def complete(self, now: float, works: deque[float]) -> float:
        """The head finishes now; returns its arrival time."""
        arrived = self.queue.popleft()
        works.popleft()
        self.t_last = now
        if works:
            self.head_left = works[0]
        self.version += 1
        return arrived


class SessionLatency:
    """Turn TTFA at a session count: log-normal through the level's p50/p95, interpolated; extrapolated above."""

    def __init__(self, curve: Curve) -> None:
        pts = curve.rungs
        self.levels = [p.level for p in pts]
        self.p50 = [p.p50_ms for p in pts]
        self.p95 = [p.p95_ms for p in pts]
        self.top = self.levels[-1]

    def quantiles(self, n: float) -> tuple[float, float, bool]:
        """(p50_ms, p95_ms, extrapolated) at n sessions."""
        if n <= self.top or len(self.levels) == 1:
            return (float(np.interp(n, self.levels, self.p50)), float(np.interp(n, self.levels, self.p95)),
                    n > self.top)
        (l0, l1), (a0, a1), (b0, b1) = self.levels[-2:], self.p50[-2:], self.p95[-2:]
        f = (n - l1) / (l1 - l0)
        return a1 + f * (a1 - a0), max(b1 + f * (b1 - b0), a1 + f * (a1 - a0)), True

    def draw(self, n: float, z: float) -> tuple[float, bool]:
        """A turn's TTFA (ms) at n sessions from a standard normal draw z."""
        p50, p95, over = self.quantiles(n)
        return p50 * math.exp(spread_sigma(p50, p95) * z), over


def closed_loop(curve: Curve, clients: int, duration_s: float, seed: int) -> list[float]:
    """Latencies (s) of a closed loop of `clients` with no think time, after a warm-up of a tenth.

    Each client spends d outside the server per cycle; a latency is its time in the server plus d.
    """
    rng = np.random.default_rng(seed)
    d = overhead_s(curve)
    server = FlowServer(throughput_table(curve, clients))
    works: deque[float] = deque()
    draws = iter(work_draws(curve, int(duration_s * max(p.rps for p in curve.rungs) * 3) + clients + 10,
                            rng))
    back: list[float] = [0.0] * clients    # when each client outside the server sends again
    out: list[float] = []
    now = 0.0
    while now < duration_s:
        due = server.due() if server.queue else math.inf
        nxt = min(back) if back else math.inf
        if nxt <= due:
            back.remove(nxt)
            server.admit(nxt, next(draws), works)
            now = nxt
            continue
        now = due
        arrived = server.complete(now, works)
        if now > duration_s / 10:
            out.append(now - arrived + d)
        back.append(now + d)
    return out


def open_loop(curve: Curve, rate: float, duration_s: float, seed: int) -> list[float]:
    """Latencies (s) of Poisson arrivals at `rate` to one instance (no bound), after a warm-up of a tenth."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(1 / rate, int(rate * duration_s * 1.2) + 10))
    times = times[times < duration_s]
    works_in = work_draws(curve, len(times), rng)
    server = FlowServer(throughput_table(curve, 10_000))
    d = overhead_s(curve)
    works: deque[float] = deque()
    out: list[float] = []
    i, n = 0, len(times)
    while i < n or server.queue:
        due = server.due() if server.queue else math.inf
        if i < n and times[i] < due:
            server.admit(float(times[i]), float(works_in[i]), works)
            i += 1
        else:
            arrived = server.complete(due, works)
            if arrived > duration_s / 10:
                out.append(due - arrived + d)
    return out
