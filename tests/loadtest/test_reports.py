"""Report plots: the playback spans the timeline draws agree with the underrun metric."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bidi_tts.metrics import LatencyRecorder, playback_underruns
from bidi_tts_loadtest.reports import playback_spans, plot_cdf, plot_timeline

RATE = 24_000
FRAME_100MS = 4_800  # bytes of 0.1 s at 24 kHz, 16-bit mono


def test_a_late_frame_is_one_dry_span_from_the_end_of_playback_to_its_arrival() -> None:
    frames = [[1.0, FRAME_100MS], [1.05, FRAME_100MS], [1.5, FRAME_100MS]]
    playing, dry = playback_spans(frames, RATE)
    assert playing == [(1.0, pytest.approx(0.2)), (1.5, pytest.approx(0.1))]
    assert dry == [(pytest.approx(1.2), pytest.approx(0.3))]


def test_frames_in_time_play_as_one_span_from_the_first_arrival() -> None:
    playing, dry = playback_spans([[2.0, FRAME_100MS], [2.01, FRAME_100MS], [2.15, FRAME_100MS]], RATE)
    assert playing == [(2.0, pytest.approx(0.3))] and dry == []


@given(st.lists(st.tuples(st.floats(0, 0.3), st.integers(1, 20_000)), min_size=1, max_size=30))
def test_dry_spans_are_the_metric_underruns(steps: list[tuple[float, int]]) -> None:
    at, frames = 0.0, []
    for delay, size in steps:
        at += delay
        frames.append([at, size * 2])
    _, dry = playback_spans(frames, RATE)
    metric = playback_underruns([f[0] for f in frames], [f[1] / (2 * RATE) for f in frames])
    assert len(dry) == metric.count
    assert sum(length for _, length in dry) == pytest.approx(metric.stall_s, abs=1e-9)


def test_plots_render(tmp_path: Path) -> None:
    recorder = LatencyRecorder()
    for i in range(20):
        recorder.add("ttfa_ms", 100 + i, 0.0)
        recorder.add("gap_ms", 0.01 + i, 0.0)
    plot_cdf(recorder, tmp_path / "cdf.png", slo_ttfa_ms=300)
    trace = {"turn_starts": [0.0], "messages": [
        {"text": "Hello there.", "sent": 0.1, "completed": 1.6, "sample_rate": RATE,
         "frames": [[1.0, FRAME_100MS], [1.05, FRAME_100MS], [1.5, FRAME_100MS]]}]}
    plot_timeline(trace, tmp_path / "timeline.png")
    assert (tmp_path / "cdf.png").stat().st_size > 5_000
    assert (tmp_path / "timeline.png").stat().st_size > 5_000
