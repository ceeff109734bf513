"""Latency metrics for streaming TTS, sans I/O: exact percentiles, per-message metrics, underruns.

Nothing here imports Locust or touches a clock; every timestamp comes from a
:class:`bidi_tts.session.MessageRecord` (``time.perf_counter()`` of the process that measured it).

Percentiles are exact: every sample is kept, and ``percentile`` interpolates linearly between the
two closest ranks exactly like ``numpy.percentile(values, q)`` with its default ``method="linear"``
(rank ``h = (n - 1) * q / 100``; value ``x[floor(h)] + (h - floor(h)) * (x[floor(h)+1] - x[floor(h)])``).
Locust's own statistics round response times to about two significant figures; these do not.

:class:`LatencyRecorder` holds named series of ``(wall_time, value)`` samples plus per-session
summaries. Its state is plain JSON-able lists, so Locust workers can ship it to the master, which
merges the records exactly (merging keeps every sample, so merged percentiles stay exact).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bidi_tts.protocol import CHANNELS, SAMPLE_WIDTH_BYTES

#: The percentiles reported by :func:`summarize`, keyed by their JSON names.
PERCENTILES: dict[str, float] = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}


def percentile(values: Sequence[float], q: float, *, presorted: bool = False) -> float:
    """The exact q-th percentile (0..100) with numpy's default linear interpolation.

    Raises ValueError on an empty sequence or a q outside 0..100.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} is outside 0..100")
    xs = values if presorted else sorted(values)
    h = (len(xs) - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (h - lo) * (xs[hi] - xs[lo]))


def summarize(values: Iterable[float], *, scale: float = 1.0) -> dict[str, float | int | None]:
    """count, mean, min, p50, p90, p95, p99, p99.9, max of `values` (each multiplied by `scale`).

    With no values the count is 0 and every statistic is None (JSON null), never a made-up 0.
    """
    xs = sorted(v * scale for v in values)
    out: dict[str, float | int | None] = {"count": len(xs)}
    if not xs:
        out.update({"mean": None, "min": None, **{k: None for k in PERCENTILES}, "max": None})
        return out
    out["mean"] = math.fsum(xs) / len(xs)
    out["min"] = xs[0]
    for name, q in PERCENTILES.items():
        out[name] = percentile(xs, q, presorted=True)
    out["max"] = xs[-1]
    return out


# -- playback continuity ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Underruns:
    """Playback stalls of a stream of audio frames: how many, and for how long in total."""

    count: int
    stall_s: float


def playback_underruns(
    arrivals: Sequence[float], durations: Sequence[float], *, tolerance_s: float = 0.0
) -> Underruns:
    """Simulate a player that starts at the first frame's arrival and plays frames back to back.

    An underrun happens when a frame arrives after everything received before it has finished
    playing (later than `tolerance_s` past that moment). The stall lasts from the moment the
    buffer ran dry to the late frame's arrival; playback then resumes at that arrival.
    """
    if len(arrivals) != len(durations):
        raise ValueError("arrivals and durations differ in length")
    if not arrivals:
        return Underruns(0, 0.0)
    play_end = arrivals[0] + durations[0]
    count, stall = 0, 0.0
    for at, duration in zip(arrivals[1:], durations[1:], strict=True):
        if at > play_end + tolerance_s:
            count += 1
            stall += at - play_end
            play_end = at + duration
        else:
            play_end += duration
    return Underruns(count, stall)


def playback_time(
    arrivals: Sequence[float], sizes: Sequence[int], byte_offset: int, bytes_per_s: float,
    *, tolerance_s: float = 0.0,
) -> float | None:
    """When the byte at `byte_offset` of a stream is played by the player of
    :func:`playback_underruns` (starts at the first arrival, plays frames back to back, resumes at
    a late frame's arrival). None when the stream holds fewer bytes.

    This is how a listener hears a sample: after every sample before it has played, and never
    before its frame arrived.
    """
    if len(arrivals) != len(sizes):
        raise ValueError("arrivals and sizes differ in length")
    if byte_offset < 0 or bytes_per_s <= 0:
        raise ValueError("byte_offset must be >= 0 and bytes_per_s > 0")
    play_end: float | None = None
    start_byte = 0
    for at, size in zip(arrivals, sizes, strict=True):
        begin = at if play_end is None or at > play_end + tolerance_s else play_end
        if byte_offset < start_byte + size:
            return begin + (byte_offset - start_byte) / bytes_per_s
        play_end = begin + size / bytes_per_s
        start_byte += size
    return None


def frame_gaps(arrivals: Sequence[float]) -> list[float]:
    """Seconds between consecutive frame arrivals."""
    return [b - a for a, b in itertools.pairwise(arrivals)]


# -- per-message metrics ----------------------------------------------------------------------------


class _RecordLike:  # the fields of bidi_tts.session.MessageRecord this module reads (for typing)
    sent_at: float
    first_audio_at: float | None
    first_audible_byte: int | None
    completed_at: float | None
    sample_rate: int
    audio_bytes: int
    frame_times: list[float]
    frame_sizes: list[int]
    error_code: str | None


@dataclass(frozen=True, slots=True)
class MessageMetrics:
    """What one synthesize message measured, in seconds.

    `ttfa_s` runs from the moment the container could start the message (its send, or the arrival
    of the previous message's ``synthesis_complete`` on the same session when that came later: a
    session streams one message at a time, TTS-ORDER) to the first AUDIO frame, never to
    ``synthesis_start``. `ttfa_from_send_s` includes that queueing; `queue_s` is the difference.
    `rtf` is wall time from start to ``synthesis_complete`` per second of audio (below 1 is faster
    than real time). `ttfa_audible_s` runs from the same start as `ttfa_s` to the moment a player
    that starts at the first audio frame (:func:`playback_time`) plays the first audible sample
    (:data:`bidi_tts.audio.AUDIBLE_DBFS`); None when no sample was audible.
    """

    ttfa_s: float | None
    ttfa_from_send_s: float | None
    queue_s: float
    complete_s: float | None
    audio_s: float
    rtf: float | None
    gaps_s: list[float] = field(default_factory=list)
    underruns: Underruns = Underruns(0, 0.0)
    error_code: str | None = None
    ttfa_audible_s: float | None = None


def message_metrics(
    record: Any, *, ready_at: float | None = None, tolerance_s: float = 0.0
) -> MessageMetrics:
    """Metrics of one :class:`bidi_tts.session.MessageRecord`.

    `ready_at`: when the previous message of the session completed (None for the first one).
    """
    start = record.sent_at if ready_at is None else max(record.sent_at, ready_at)
    bytes_per_s = SAMPLE_WIDTH_BYTES * CHANNELS * record.sample_rate
    audio_s = record.audio_bytes / bytes_per_s
    first = record.first_audio_at
    done = record.completed_at
    durations = [size / bytes_per_s for size in record.frame_sizes]
    complete_s = None if done is None else done - start
    audible_byte = getattr(record, "first_audible_byte", None)
    audible_at = None if audible_byte is None else playback_time(
        record.frame_times, record.frame_sizes, audible_byte, bytes_per_s, tolerance_s=tolerance_s)
    return MessageMetrics(
        ttfa_s=None if first is None else first - start,
        ttfa_from_send_s=None if first is None else first - record.sent_at,
        queue_s=start - record.sent_at,
        complete_s=complete_s,
        audio_s=audio_s,
        rtf=None if complete_s is None or audio_s <= 0 else complete_s / audio_s,
        gaps_s=frame_gaps(record.frame_times),
        underruns=playback_underruns(record.frame_times, durations, tolerance_s=tolerance_s),
        error_code=record.error_code,
        ttfa_audible_s=None if audible_at is None else audible_at - start,
    )


# -- the mergeable recorder -------------------------------------------------------------------------


@dataclass(slots=True)
class _Series:
    times: list[float] = field(default_factory=list)  # wall clock (time.time()) of each sample
    values: list[float] = field(default_factory=list)


class LatencyRecorder:
    """Exact samples by metric name, plus one summary dict per finished session.

    Each sample carries a wall-clock time so a shape (capacity sweep) can look at one step's
    window. :meth:`state` / :meth:`merge_state` move records between processes as JSON-able data;
    :meth:`drain` hands over what was recorded since the last drain (a worker's periodic report).
    """

    def __init__(self) -> None:
        self._series: dict[str, _Series] = {}
        self.sessions: list[dict[str, Any]] = []
        self.traces: list[dict[str, Any]] = []  # detailed timelines of a few sessions, for plots

    def add(self, name: str, value: float, at: float) -> None:
        """Record one sample of metric `name` taken at wall time `at`."""
        series = self._series.setdefault(name, _Series())
        series.times.append(at)
        series.values.append(float(value))

    def add_session(self, summary: dict[str, Any]) -> None:
        self.sessions.append(summary)

    def add_trace(self, trace: dict[str, Any], *, keep: int = 3) -> None:
        if len(self.traces) < keep:
            self.traces.append(trace)

    def names(self) -> list[str]:
        return sorted(self._series)

    def values(self, name: str, *, since: float | None = None, until: float | None = None) -> list[float]:
        """Samples of `name`, optionally only those taken in [since, until)."""
        series = self._series.get(name)
        if series is None:
            return []
        if since is None and until is None:
            return list(series.values)
        lo = -math.inf if since is None else since
        hi = math.inf if until is None else until
        return [v for t, v in zip(series.times, series.values, strict=True) if lo <= t < hi]

    def total(self, name: str, **window: float | None) -> float:
        return math.fsum(self.values(name, **window))

    def count(self, name: str, **window: float | None) -> int:
        return len(self.values(name, **window))

    def state(self) -> dict[str, Any]:
        """JSON-able copy of everything recorded."""
        return {
            "series": {k: [list(s.times), list(s.values)] for k, s in self._series.items()},
            "sessions": list(self.sessions),
            "traces": list(self.traces),
        }

    def drain(self) -> dict[str, Any]:
        """The state recorded since the last drain, and forget it."""
        out = self.state()
        self._series.clear()
        self.sessions = []
        self.traces = []
        return out

    def merge_state(self, state: dict[str, Any], *, keep_traces: int = 3) -> None:
        """Add another recorder's state (from :meth:`state` or :meth:`drain`) to this one."""
        for name, (times, values) in state.get("series", {}).items():
            if len(times) != len(values):
                raise ValueError(f"series {name!r}: {len(times)} times but {len(values)} values")
            series = self._series.setdefault(name, _Series())
            series.times.extend(float(t) for t in times)
            series.values.extend(float(v) for v in values)
        self.sessions.extend(state.get("sessions", []))
        for trace in state.get("traces", []):
            self.add_trace(trace, keep=keep_traces)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LatencyRecorder:
        recorder = cls()
        recorder.merge_state(state)
        return recorder
