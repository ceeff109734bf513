"""bidi_tts.metrics: exact percentiles against numpy, underrun cases, mergeable recorder."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bidi_tts import protocol
from bidi_tts.frames import FrameKind
from bidi_tts.metrics import (
    LatencyRecorder,
    message_metrics,
    percentile,
    playback_time,
    playback_underruns,
    summarize,
)
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession, MessageRecord
from bidi_tts.transports.base import Frame

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(st.lists(finite, min_size=1, max_size=200), st.floats(min_value=0, max_value=100))
def test_percentile_matches_numpy_linear(values: list[float], q: float) -> None:
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-6)


def test_percentile_small_known_values() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10], 99.9) == 10
    assert percentile([0, 100], 95) == 95
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_summarize_keys_and_empty() -> None:
    s = summarize([0.1, 0.2, 0.3], scale=1000)
    assert s["count"] == 3 and s["max"] == pytest.approx(300) and s["p50"] == pytest.approx(200)
    assert s["mean"] == pytest.approx(200)
    assert set(s) >= {"p50", "p90", "p95", "p99", "p99.9", "max", "min", "mean", "count"}
    empty = summarize([])
    assert empty["count"] == 0 and empty["p95"] is None


def test_no_underrun_when_frames_arrive_in_time() -> None:
    # 0.1 s frames arriving every 0.1 s exactly: the buffer never runs dry.
    arrivals = [0.0, 0.1, 0.2, 0.3]
    assert playback_underruns(arrivals, [0.1] * 4).count == 0


def test_no_underrun_when_audio_arrives_faster_than_realtime() -> None:
    assert playback_underruns([0.0, 0.01, 0.02], [0.5, 0.5, 0.5]).count == 0


def test_one_underrun_with_its_stall() -> None:
    # First frame plays 0..0.1, next arrives at 0.25: 0.15 s stall; playback resumes at 0.25.
    u = playback_underruns([0.0, 0.25, 0.35], [0.1, 0.1, 0.1])
    assert u.count == 1
    assert u.stall_s == pytest.approx(0.15)


def test_buffer_carries_over_and_resume_at_late_arrival() -> None:
    # 1 s of buffer from the first frame absorbs a late 2nd frame; a stall resets the clock.
    u = playback_underruns([0.0, 0.9, 3.0, 3.2, 3.5], [1.0, 0.1, 0.1, 0.1, 0.1])
    # play_end: 1.0 -> 1.1 (0.9 in time) -> stall at 3.0 (1.9 s) -> 3.1 -> 3.2 late (0.1 s)
    # -> 3.3 -> 3.5 late (0.2 s)
    assert u.count == 3
    assert u.stall_s == pytest.approx(1.9 + 0.1 + 0.2)


def test_underrun_tolerance() -> None:
    assert playback_underruns([0.0, 0.105], [0.1, 0.1], tolerance_s=0.01).count == 0
    assert playback_underruns([0.0, 0.105], [0.1, 0.1]).count == 1


def _record(sent: float, frames: list[tuple[float, int]], done: float | None) -> MessageRecord:
    r = MessageRecord("r1", "Hello.", sent)
    for at, size in frames:
        if r.first_audio_at is None:
            r.first_audio_at = at
        r.frame_times.append(at)
        r.frame_sizes.append(size)
        r.audio_bytes += size
    r.started_at = sent + 0.001
    r.completed_at = done
    return r


def test_message_metrics_ttfa_is_first_audio_not_start() -> None:
    # 4800 bytes at 24 kHz s16 = 0.1 s per frame.
    rec = _record(10.0, [(10.2, 4800), (10.25, 4800), (10.5, 4800)], 10.6)
    m = message_metrics(rec)
    assert m.ttfa_s == pytest.approx(0.2)
    assert m.complete_s == pytest.approx(0.6)
    assert m.audio_s == pytest.approx(0.3)
    assert m.rtf == pytest.approx(2.0)
    assert m.gaps_s == pytest.approx([0.05, 0.25])
    assert m.underruns.count == 1 and m.underruns.stall_s == pytest.approx(0.1)  # dry at 10.4, frame at 10.5


def test_message_metrics_excludes_queueing_behind_previous_message() -> None:
    rec = _record(10.0, [(10.5, 4800)], 10.6)
    m = message_metrics(rec, ready_at=10.3)
    assert m.ttfa_s == pytest.approx(0.2)
    assert m.ttfa_from_send_s == pytest.approx(0.5)
    assert m.queue_s == pytest.approx(0.3)
    assert message_metrics(rec, ready_at=9.0).queue_s == 0


def test_recorder_merge_is_exact_and_json_serializable() -> None:
    rng = np.random.default_rng(1)
    values = rng.exponential(0.2, 3000)
    parts = [LatencyRecorder() for _ in range(3)]
    for i, v in enumerate(values):
        parts[i % 3].add("ttfa", float(v), at=float(i))
    master = LatencyRecorder()
    for p in parts:
        master.merge_state(json.loads(json.dumps(p.drain())))
        assert p.values("ttfa") == []  # drained
    merged = master.values("ttfa")
    assert len(merged) == 3000
    for q in (50, 90, 95, 99, 99.9):
        assert percentile(merged, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)
    assert master.count("ttfa", since=100, until=200) == 100


def test_recorder_rejects_malformed_state() -> None:
    with pytest.raises(ValueError):
        LatencyRecorder().merge_state({"series": {"x": [[1.0, 2.0], [1.0]]}})


def _audible_record(sent: float, frames: list[tuple[float, bytes]]) -> tuple[MessageRecord, ClientSession]:
    """A record filled the way a session fills it: audio frames through receive_frame."""
    session = ClientSession()
    session.synthesize(SynthesizeRequest(text="Hello.", request_id="r1"), at=sent)
    session.receive_frame(Frame(protocol.synthesis_start("r1", 24000).encode(), FrameKind.TEXT, sent + 0.01))
    for at, pcm in frames:
        session.receive_frame(Frame(pcm, FrameKind.BINARY, at))
    done = protocol.synthesis_complete("r1", sum(len(p) for _, p in frames), 24000)
    session.receive_frame(Frame(done.encode(), FrameKind.TEXT, frames[-1][0] + 0.01))
    return session.records["r1"], session


def test_audible_ttfa_adds_the_leading_silence_as_played() -> None:
    silence, loud = bytes(4800), b"\x00\x10" * 2400  # 0.1 s each; 0x1000 = 4096 > 328
    # 0.3 s of digital silence in three frames sent at once, then the tone: heard 0.3 s after the first byte.
    rec, _ = _audible_record(10.0, [(10.2, silence), (10.2, silence), (10.2, silence), (10.21, loud)])
    assert rec.first_audible_byte == 3 * 4800
    m = message_metrics(rec)
    assert m.ttfa_s == pytest.approx(0.2)
    assert m.ttfa_audible_s == pytest.approx(0.5)
    # audible from the first sample: the same as ttfa
    rec, _ = _audible_record(10.0, [(10.2, loud)])
    assert message_metrics(rec).ttfa_audible_s == pytest.approx(message_metrics(rec).ttfa_s)
    # nothing audible at all: no value, never a made-up one
    rec, _ = _audible_record(10.0, [(10.2, silence)])
    assert rec.first_audible_byte is None and message_metrics(rec).ttfa_audible_s is None


def test_audible_sample_is_heard_no_earlier_than_its_frame_arrives() -> None:
    silence, loud = bytes(4800), bytes(100) + b"\x00\x10" * 2350
    # the loud frame arrives 0.4 s after a 0.1 s silent frame ran out: it is heard when it arrives
    rec, _ = _audible_record(10.0, [(10.2, silence), (10.7, loud)])
    assert rec.first_audible_byte == 4800 + 100
    assert message_metrics(rec).ttfa_audible_s == pytest.approx(0.7 + 50 / 24000)


def test_playback_time_follows_the_player() -> None:
    assert playback_time([0.0, 0.05], [4800, 4800], 4800, 48000) == pytest.approx(0.1)
    assert playback_time([0.0, 0.5], [4800, 4800], 4800, 48000) == pytest.approx(0.5)
    assert playback_time([0.0], [4800], 4800, 48000) is None
    with pytest.raises(ValueError):
        playback_time([0.0], [1, 2], 0, 48000)
