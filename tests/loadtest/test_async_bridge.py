"""loadtest.async_bridge: an asyncio transport driven from gevent without blocking the hub."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.loadtest.servers import ROOT, known_latency_server

pytestmark = pytest.mark.timeout(60)


def test_async_transport_under_gevent_keeps_hub_free_and_timings_exact() -> None:
    with known_latency_server(100) as url:
        proc = subprocess.run([sys.executable, "-m", "tests.loadtest.bridge_probe", url], cwd=ROOT,
                              capture_output=True, text=True, timeout=45)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["failure"] is None and out["close_code"] == 1000
    assert len(out["ttfa_ms"]) == 3
    assert all(100 - 5 <= t < 100 + 60 for t in out["ttfa_ms"]), out
    # The ticker kept running every ~10 ms while the asyncio loop worked in its own thread.
    assert out["ticks"] >= 0.5 * out["elapsed_s"] / 0.01
    assert out["max_tick_gap_ms"] < 200
