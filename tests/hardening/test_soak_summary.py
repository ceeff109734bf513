"""The soak benchmark's verdict: flat figures pass, growth and protocol errors do not."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "container"))

import soak


def _run(rss_end: float, errors: int = 0) -> soak.Run:
    run = soak.Run(started=0.0)
    run.ttfa = [(t, 0.5) for t in range(1, 101)]
    run.samples = [soak.Sample(t, 500 + (rss_end - 500) * t / 100, 20, 8) for t in range(1, 101)]
    run.protocol_errors = ["error frame internal"] * errors
    return run


def test_flat_run_is_ok() -> None:
    summary = soak.summarize(_run(rss_end=520), sessions=4)
    assert summary["flat"] is True and summary["ok"] is True


def test_memory_growth_is_not_flat() -> None:
    summary = soak.summarize(_run(rss_end=900), sessions=4)
    assert summary["drift"]["rss_mb"]["flat"] is False  # type: ignore[index]
    assert summary["ok"] is False


def test_protocol_errors_fail_the_soak() -> None:
    assert soak.summarize(_run(rss_end=500, errors=1), sessions=4)["ok"] is False
