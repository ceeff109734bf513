"""Report plots: the playback spans the timeline draws agree with the underrun metric; every plot says
what run it shows; the chart over time buckets the exact samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bidi_tts.metrics import LatencyRecorder, playback_underruns
from bidi_tts_loadtest.run.reports import playback_spans, plot_cdf, plot_over_time, plot_timeline, settings_caption
from bidi_tts_loadtest.run.timeseries import ACTIVE_USERS, AUDIO_S, over_time, pick_interval

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


# -- what a reader needs on each plot (issue 25) -----------------------------------------------------
SETTINGS = {"host": "http://127.0.0.1:8080", "users": 8, "spawn_rate": 2.0, "run_time_s": 60, "shape": "none",
            "voice": "af_heart", "tokens_per_second": 40.0, "started_at": "2026-12-01T16:00:00+00:00",
            "versions": {"bidi-tts": "0.1.0"}}


def test_each_plot_says_the_run_s_settings_labels_p95_and_draws_gaps_on_a_log_axis(tmp_path: Path) -> None:
    recorder = LatencyRecorder()
    for i in range(50):
        recorder.add("ttfa_ms", 100 + i, 1000.0 + i)
        recorder.add("gap_ms", 0.0 if i % 2 else 10.0 ** (i % 4), 1000.0 + i)
    caption = settings_caption(SETTINGS)
    assert caption.startswith("http://127.0.0.1:8080 \u00b7 8 users, spawn 2.0/s") and "af_heart" in caption
    fig = plot_cdf(recorder, tmp_path / "cdf.png", 300, caption)
    ttfa, _, gaps = fig.axes
    assert gaps.get_xscale() == "symlog" and ttfa.get_xscale() == "linear"
    assert "0.95 (p95)" in [t.get_text() for t in ttfa.get_legend().get_texts()]
    assert caption in [t.get_text() for t in fig.texts]
    trace = {"turn_starts": [0.0], "messages": [
        {"text": f"Message {i}.", "sent": 0.1 * i, "completed": 1.6, "sample_rate": RATE,
         "frames": [[1.0, FRAME_100MS], [1.5, FRAME_100MS]]} for i in range(3)]}
    timeline = plot_timeline(trace, tmp_path / "timeline.png", caption)
    assert [t.get_text() for t in timeline.axes[0].get_yticklabels()] == ["message 1", "message 2", "message 3"]
    assert timeline.axes[0].get_ylabel() and caption in [t.get_text() for t in timeline.texts]


def test_the_chart_over_time_buckets_the_exact_samples(tmp_path: Path) -> None:
    recorder = LatencyRecorder()
    start = 1000.0
    for second in range(10):
        for k in range(5):  # TTFA 100..104 in the first half, 200..204 in the second
            recorder.add("ttfa_ms", (100 if second < 5 else 200) + k, start + second + k * 0.1)
        recorder.add(ACTIVE_USERS, second + 1, start + second)
        recorder.add(AUDIO_S, 2.0, start + second + 0.5)
        recorder.add("underruns", 3 if second == 7 else 0, start + second + 0.5)
    t = over_time(recorder, start, start + 10, interval_s=1.0)
    assert t.starts == [float(s) for s in range(10)]
    assert t.ttfa_p50[:5] == [102.0] * 5 and t.ttfa_p50[5:] == [202.0] * 5
    assert t.active_users == [float(s + 1) for s in range(10)]
    assert t.audio_s_per_s == [2.0] * 10 and t.underruns == [0] * 7 + [3] + [0] * 2
    assert pick_interval(40) == 1.0 and pick_interval(3600) == 60.0
    fig = plot_over_time(recorder, tmp_path / "over_time.png", start, start + 10, caption="run X", slo_ttfa_ms=150)
    assert [a.get_ylabel() for a in fig.axes] == ["TTFA (ms)", "active users", "audio s per s", "underruns / 1 s"]
    assert "run X" in [t.get_text() for t in fig.texts] and (tmp_path / "over_time.png").stat().st_size > 5_000


def test_write_reports_adds_the_chart_over_time_when_the_run_s_window_is_known(tmp_path: Path) -> None:
    from bidi_tts_loadtest.run.reports import write_reports
    from bidi_tts_loadtest.run.slo import Slo
    from bidi_tts_loadtest.run.summary import build_summary

    recorder = LatencyRecorder()
    recorder.add("ttfa_ms", 120.0, 1000.5)
    summary = {**build_summary(recorder, Slo()), "settings": SETTINGS}
    names = {p.name for p in write_reports(tmp_path / "a", recorder, summary, window=(1000.0, 1002.0))}
    assert names == {"summary.json", "latency_cdf.png", "over_time.png"}
    assert "over_time.png" not in {p.name for p in write_reports(tmp_path / "b", recorder, summary)}
