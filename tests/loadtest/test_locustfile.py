"""The locustfile headless against a server with known latency: summary vs truth, SLO exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.loadtest.servers import ROOT, known_latency_server, locust_cmd

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]
TRUTH_MS = 120.0


def run_locust(
    url: str, tmp: Path, *extra: str, users: int = 4, run_time: str = "6s"
) -> tuple[int, dict, str]:
    out = tmp / "summary.json"
    proc = subprocess.run(
        locust_cmd("--headless", "-u", str(users), "-r", str(users), "--run-time", run_time, "--host", url,
                   "--summary-json", str(out), "--tokens-per-second", "120", "--turn-pause-s", "0.1",
                   "--only-summary", *extra),
        cwd=ROOT, capture_output=True, text=True, timeout=90)
    summary = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, summary, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def server():
    with known_latency_server(TRUTH_MS) as url:
        yield url


def test_summary_matches_injected_latency(server: str, tmp_path: Path) -> None:
    code, s, log = run_locust(server, tmp_path, "--report-dir", str(tmp_path / "report"), "--wav-dumps", "1")
    assert code == 0, log
    for key in ("sessions", "messages", "errors", "underruns", "ttfa_ms", "complete_ms", "gap_ms", "goodput"):
        assert key in s
    assert s["messages"] >= 10 and s["errors"] == 0 and s["sessions"] >= 1
    for p in ("p50", "p90", "p95", "p99", "p99.9", "max"):
        assert s["ttfa_ms"][p] >= TRUTH_MS - 1  # never earlier than the server can answer
    # Median within a few ms of the truth (the server's asyncio sleep overshoots by ~1 ms itself).
    assert s["ttfa_ms"]["p50"] == pytest.approx(TRUTH_MS, abs=10), s["ttfa_ms"]
    # Three back-to-back frames after the delay: completion right after first audio.
    assert s["complete_ms"]["p50"] - s["ttfa_ms"]["p50"] < 10
    assert s["gap_ms"]["count"] == 2 * s["messages"]
    report = tmp_path / "report"
    assert (report / "latency_cdf.png").stat().st_size > 1000
    assert (report / "session_timeline.png").stat().st_size > 1000
    assert list((report / "wav").glob("*.wav"))


def test_loose_slo_exits_zero_and_impossible_slo_exits_nonzero(server: str, tmp_path: Path) -> None:
    code, s, log = run_locust(server, tmp_path, "--slo-ttfa-p95-ms", "5000", "--slo-error-rate", "0.01",
                              "--slo-underruns", "1000", "--turns-per-session", "1", users=2, run_time="4s")
    assert code == 0, log
    assert s["slo_passed"] and s["goodput"] == 1.0
    code, s, log = run_locust(server, tmp_path, "--slo-ttfa-p95-ms", "1", "--turns-per-session", "1", users=2,
                              run_time="4s")
    assert code != 0
    assert not s["slo_passed"] and s["slo_broken"] and s["goodput"] == 0.0


def test_underruns_are_counted_against_a_slow_streaming_server(tmp_path: Path) -> None:
    # 100 ms frames sent 250 ms apart: every frame after the first arrives after the buffer ran dry.
    with known_latency_server(50, "--frames", "3", "--frame-interval-ms", "250") as url:
        code, s, log = run_locust(url, tmp_path, "--slo-underruns", "0", users=1, run_time="4s")
    assert s["messages"] >= 1, log
    assert s["underruns"] == 2 * s["messages"]
    assert s["underrun_stall_ms"] == pytest.approx(s["underruns"] * 150, rel=0.2)
    assert code != 0


def test_audible_ttfa_hears_300_ms_of_leading_silence(tmp_path: Path) -> None:
    # The same toy twice: audible from its first byte, then with 300 ms of digital silence first.
    with known_latency_server(80) as url:
        code, plain, log = run_locust(url, tmp_path, users=1, run_time="4s")
    assert code == 0 and plain["messages"] >= 3, log
    a, t = plain["ttfa_audible_ms"], plain["ttfa_ms"]
    assert a["count"] == plain["messages"] and a["p50"] == pytest.approx(t["p50"], abs=1)
    with known_latency_server(80, "--leading-silence-ms", "300") as url:
        code, s, log = run_locust(url, tmp_path, "--slo-ttfa-p95-ms", "250", users=1, run_time="4s")
        assert code == 0, log  # first byte still in time...
        a, t = s["ttfa_audible_ms"], s["ttfa_ms"]
        assert set(a) >= {"p50", "p90", "p95", "p99", "max"}
        for p in ("p50", "p95", "max"):
            assert a[p] - t[p] == pytest.approx(300, abs=5), (a, t)
        # ...but the first thing heard is late: the audible SLO breaks, the first-byte one does not
        code, s, log = run_locust(url, tmp_path, "--slo-ttfa-audible-p95-ms", "250", users=1, run_time="4s")
    assert code != 0 and s["slo_broken"] == [f"p95 audible TTFA ms {s['ttfa_audible_ms']['p95']:.1f} > 250"]
