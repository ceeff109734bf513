"""The instance model of the fleet simulation: it replays its own ladder (Little), and queues like M/D/1."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np
import pytest

from bidi_tts.fleet_plan import Curve, parse_curve, read_plan
from bidi_tts.metrics import percentile
from bidi_tts_loadtest.fleet.instance import FlowServer, SessionLatency, closed_loop, open_loop, spread_sigma

DATA = Path(__file__).parent / "data"
SAMPLE = read_plan(DATA / "fleet_plan_sample.json").curve
assert SAMPLE is not None


def replay_error(curve: Curve, level: int, latencies: list[float]) -> float:
    """Relative error of the replayed mean latency against the rung's N / X(N) (Little's law)."""
    rung = next(p for p in curve.rungs if p.level == level)
    return abs(float(np.mean(latencies)) - level / rung.rps) / (level / rung.rps)


@pytest.mark.parametrize("level", [1, 5, 10, 20, 50])
def test_a_closed_loop_replay_reproduces_the_ladder(level: int) -> None:
    lat = closed_loop(SAMPLE, level, duration_s=60.0, seed=level)
    rung = next(p for p in SAMPLE.rungs if p.level == level)
    assert replay_error(SAMPLE, level, lat) < 0.02
    # and the measured quantiles, which the model never saw above the first rung
    assert percentile(lat, 50) * 1000 == pytest.approx(rung.p50_ms, rel=0.10)
    assert percentile(lat, 95) * 1000 == pytest.approx(rung.p95_ms, rel=0.10)


class _OneRate(FlowServer):
    """Broken on purpose: serves at the one-client rung's 16.08 rps whatever the count, as a model that
    ignored the curve above it would."""

    def _rate(self) -> float:
        return SAMPLE.rungs[0].rps if self.queue else 0.0


def test_the_replay_check_catches_a_model_that_ignores_the_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bidi_tts_loadtest.fleet.instance.FlowServer", _OneRate)
    lat = closed_loop(SAMPLE, 10, duration_s=60.0, seed=1)
    assert replay_error(SAMPLE, 10, lat) > 0.08  # 10 / 16.08 rps, not 10 / 17.92


def test_md1_mean_wait_matches_pollaczek_khinchine() -> None:
    mu, rho = 10.0, 0.7
    flat = parse_curve([[1, mu, 100.0, 100.0]], "M/D/1")  # X(n) = mu; p95 = p50: deterministic work
    lat = open_loop(flat, rho * mu, duration_s=4000.0, seed=3)
    wait = float(np.mean(lat)) - 1 / mu
    pk = rho / (2 * mu * (1 - rho))
    assert wait == pytest.approx(pk, rel=0.10)
    # a server twice as fast (a wrong X) would miss it by far more than the tolerance
    fast = parse_curve([[1, 2 * mu, 50.0, 50.0]], "M/D/1 fast")
    assert float(np.mean(open_loop(fast, rho * mu, 4000.0, 3))) - 1 / (2 * mu) < pk / 2


def test_work_spread_comes_from_the_lowest_rung() -> None:
    assert spread_sigma(60.0, 65.4) == pytest.approx(np.log(65.4 / 60.0) / 1.6449, rel=1e-3)
    lat = closed_loop(SAMPLE, 1, duration_s=200.0, seed=2)
    assert percentile(lat, 95) / percentile(lat, 50) == pytest.approx(65.4 / 60.0, rel=0.02)


def test_flow_server_reschedules_when_a_request_arrives() -> None:
    s = FlowServer([0.0, 10.0, 20.0])  # X(1) = 10/s, X(2) = 20/s
    works: deque[float] = deque()
    assert s.admit(0.0, 1.0, works) == pytest.approx(0.1)
    # at 0.05 half the head's work is left; with two inside it drains at 20/s: done at 0.075
    assert s.admit(0.05, 1.0, works) == pytest.approx(0.075)
    assert s.complete(0.075, works) == 0.0
    assert s.due() == pytest.approx(0.175)  # the second alone again, at 10/s


def test_session_latency_interpolates_and_flags_overload() -> None:
    curve = parse_curve([[10, 1.0, 400.0, 800.0], [20, 1.0, 600.0, 1400.0]], "sessions")
    lat = SessionLatency(curve)
    assert lat.quantiles(15) == pytest.approx((500.0, 1100.0, False))
    p50, p95, over = lat.quantiles(30)
    assert over and p50 == pytest.approx(800.0) and p95 == pytest.approx(2000.0)
    rng = np.random.default_rng(0)
    draws = [lat.draw(15, z)[0] for z in rng.standard_normal(20_000)]
    assert percentile(draws, 50) == pytest.approx(500.0, rel=0.03)
    assert percentile(draws, 95) == pytest.approx(1100.0, rel=0.03)
