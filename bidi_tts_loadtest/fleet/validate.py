"""Validate the fleet simulation's instance model on one real container: closed loop in, open-loop p95 out.

A closed-loop ladder (N clients, each sending its next request when the last one's response ends) is
measured against a container; the instance model (:mod:`bidi_tts_loadtest.fleet.instance`) is built
from those rungs alone and predicts the p95 TTFA of Poisson arrivals at a few rates; then the same
container is measured under those arrivals. TTFA: from sending ``POST /invocations`` to the first byte
of its audio (a whole-message container sends none before its synthesis ends).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx
import numpy as np

from bidi_tts.fleet_plan import Curve, parse_curve
from bidi_tts.metrics import percentile
from bidi_tts_loadtest.fleet.instance import open_loop

TEXT = "The fleet model is checked against this container."


@dataclass(frozen=True, slots=True)
class Rung:
    level: float          # clients (closed) or requests/s offered (open)
    achieved_rps: float
    ttfa_ms: list[float]

    def quantile(self, q: float) -> float:
        return percentile(self.ttfa_ms, q)


async def _one(client: httpx.AsyncClient, url: str) -> tuple[float, float]:
    """(TTFA s, end s) of one request."""
    t0 = time.perf_counter()
    first = None
    async with client.stream("POST", url, json={"text": TEXT}) as response:
        if response.status_code != 200:
            raise RuntimeError(f"the container answered {response.status_code}")
        async for chunk in response.aiter_raw():
            if chunk and first is None:
                first = time.perf_counter() - t0
    if first is None:
        raise RuntimeError("a response carried no audio")
    return first, time.perf_counter() - t0


async def closed(base_url: str, clients: int, seconds: float, warmup_s: float) -> Rung:
    url = base_url + "/invocations"
    start = time.perf_counter()
    stop = start + warmup_s + seconds
    ttfa: list[float] = []
    done = 0
    limits = httpx.Limits(max_connections=clients + 4)

    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        async def loop() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                first, _ = await _one(client, url)
                # a completion counts where it ends: counting only requests sent and finished inside the
                # window drops the ones in flight at its edge, N of them, which is 7% of a 2 s rung of 3
                if start + warmup_s <= time.perf_counter() <= stop:
                    ttfa.append(first * 1000)
                    done += 1

        await asyncio.gather(*(loop() for _ in range(clients)))
    return Rung(clients, done / seconds, ttfa)


async def open_(base_url: str, rate: float, seconds: float, warmup_s: float, seed: int) -> Rung:
    url = base_url + "/invocations"
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1 / rate, int(rate * (seconds + warmup_s) * 1.3) + 20)
    offsets = np.cumsum(gaps)
    offsets = offsets[offsets < seconds + warmup_s]
    ttfa: list[float] = []

    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=2000)) as client:
        start = time.perf_counter()

        async def fire(at: float) -> None:
            await asyncio.sleep(max(0.0, start + at - time.perf_counter()))
            first, _ = await _one(client, url)
            if at >= warmup_s:
                ttfa.append(first * 1000)

        await asyncio.gather(*(fire(float(at)) for at in offsets))
    return Rung(rate, len(ttfa) / seconds, ttfa)


def curve_of(rungs: list[Rung], source: str) -> Curve:
    return parse_curve([[r.level, r.achieved_rps, r.quantile(50), r.quantile(95)] for r in rungs], source)


def predict_p95_ms(curve: Curve, rate: float, seed: int = 0, requests: int = 40_000) -> float:
    lat = open_loop(curve, rate, duration_s=requests / rate, seed=seed)
    return percentile(lat, 95) * 1000


@dataclass(frozen=True, slots=True)
class Comparison:
    rate: float
    measured_p95_ms: float
    predicted_p95_ms: float
    measured_n: int

    @property
    def error(self) -> float:
        return (self.predicted_p95_ms - self.measured_p95_ms) / self.measured_p95_ms


def validate(base_url: str, levels: list[int], rates_of_capacity: list[float], closed_s: float, open_s: float,
             warmup_s: float = 1.0, seed: int = 0) -> tuple[list[Rung], list[Comparison]]:
    """Measure the closed ladder, build the model, predict and measure open-loop p95 at fractions of capacity."""
    ladder = [asyncio.run(closed(base_url, n, closed_s, warmup_s)) for n in levels]
    curve = curve_of(ladder, f"closed-loop ladder measured at {base_url}")
    capacity = max(r.achieved_rps for r in ladder)
    out = []
    for i, f in enumerate(rates_of_capacity):
        rate = f * capacity
        rung = asyncio.run(open_(base_url, rate, open_s, warmup_s, seed + i))
        out.append(Comparison(rate, rung.quantile(95), predict_p95_ms(curve, rate, seed), len(rung.ttfa_ms)))
    return ladder, out
