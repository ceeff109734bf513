"""Report folder: latency CDF, the run over time, a session timeline, the capacity sweep (PNG) and the
summary. Every plot carries the run's settings in a caption, so a PNG read alone says what it measured."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display on load-test machines
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from bidi_tts.metrics import LatencyRecorder
from bidi_tts_loadtest.run.summary import COMPLETE, GAP, TTFA, TURN_TTFA, write_summary
from bidi_tts_loadtest.run.timeseries import over_time

#: Panels whose samples span decades (a frame gap is 0 ms or 6 s): a symmetric-log axis, linear below 1 ms.
LOG_PANELS = frozenset({GAP})


def settings_caption(settings: dict[str, Any] | None) -> str:
    """One line naming the run: target, load, conversation, start time and version."""
    if not settings:
        return ""
    target = settings.get("host") or f"endpoint {settings.get('endpoint_name')}"
    parts = [str(target)]
    if settings.get("users") is not None:
        parts.append(f"{settings['users']} users, spawn {settings.get('spawn_rate')}/s")
    if settings.get("shape") not in (None, "none"):
        parts.append(f"shape {settings['shape']}")
    if settings.get("run_time_s") is not None:
        parts.append(f"run {settings['run_time_s']} s")
    parts.append(f"voice {settings.get('voice')}, {settings.get('tokens_per_second')} tokens/s")
    if settings.get("started_at"):
        parts.append(f"started {settings['started_at']}")
    version = (settings.get("versions") or {}).get("bidi-tts")
    if version:
        parts.append(f"bidi-tts {version}")
    return " \u00b7 ".join(parts)


def _caption(fig: Any, caption: str) -> None:
    if caption:
        fig.text(0.5, 0.005, caption, ha="center", va="bottom", fontsize=7, color="dimgrey")


#: One CDF panel per metric: (title, [(series, label)]).
CDF_PANELS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Time to first audio", ((TTFA, "per message"), (TURN_TTFA, "per turn (from the LLM's start)"))),
    ("Message complete", ((COMPLETE, "synthesis_complete"),)),
    ("Gap between audio frames", ((GAP, "frame gap"),)),
)



def _saved(fig: Any, path: Path, caption: str, caption_height: float = 0.03) -> Any:
    """Lay the figure out (room for the caption at its foot), caption it, write it to `path`, close it."""
    fig.tight_layout(rect=(0, caption_height if caption else 0, 1, 1))
    _caption(fig, caption)
    fig.savefig(path, dpi=100)
    plt.close(fig)  # the Figure stays readable (tests look at its axes)
    return fig

def plot_cdf(recorder: LatencyRecorder, path: Path, slo_ttfa_ms: float | None = None, caption: str = "") -> Figure:
    """Empirical CDFs, one panel per metric, each on its own millisecond axis (the frame gap's logarithmic)."""
    fig, axes = plt.subplots(1, len(CDF_PANELS), figsize=(5 * len(CDF_PANELS), 4.2), squeeze=False)
    for ax, (title, series) in zip(axes[0], CDF_PANELS, strict=True):
        drawn = False
        for name, label in series:
            xs = sorted(recorder.values(name))
            if xs:
                ys = [(i + 1) / len(xs) for i in range(len(xs))]
                ax.step(xs, ys, where="post", label=f"{label} (n={len(xs)})")
                drawn = True
        if slo_ttfa_ms and series[0][0] == TTFA:
            ax.axvline(slo_ttfa_ms, color="red", linestyle="--", label=f"SLO p95 {slo_ttfa_ms:g} ms")
        ax.axhline(0.95, color="grey", linewidth=0.7, linestyle="--", label="0.95 (p95)")
        ax.text(1.0, 0.95, " p95", transform=ax.get_yaxis_transform(), va="center", ha="left", fontsize=8,
                color="grey")
        ax.set_title(title)
        if series[0][0] in LOG_PANELS:
            ax.set_xscale("symlog", linthresh=1.0)
            ax.set_xlim(left=0)
            ax.set_xlabel("milliseconds (log scale; linear below 1 ms)")
        else:
            ax.set_xlabel("milliseconds")
        ax.set_ylim(0, 1.02)
        ax.grid(True, alpha=0.3)
        if drawn:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=8, frameon=False)
        else:
            ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes)
    axes[0][0].set_ylabel("share of samples at or below")
    fig.suptitle("Latency CDFs (exact samples)")
    return _saved(fig, path, caption)


def playback_spans(frames: list[list[float]], sample_rate: int) -> tuple[list[tuple[float, float]],
                                                                          list[tuple[float, float]]]:
    """What a player starting at the first frame's arrival plays, and where it runs dry.

    `frames` holds [arrival, bytes] pairs (16-bit mono). Returns (playing, dry): (start, length)
    spans; the same rule as :func:`bidi_tts.metrics.playback_underruns`, so each dry span is one
    counted underrun.
    """
    playing: list[tuple[float, float]] = []
    dry: list[tuple[float, float]] = []
    play_end: float | None = None
    for at, size in frames:
        length = size / (2 * sample_rate)
        if play_end is not None and at > play_end:
            dry.append((play_end, at - play_end))
        start = at if play_end is None or at > play_end else play_end
        if playing and playing[-1][0] + playing[-1][1] == start:
            playing[-1] = (playing[-1][0], playing[-1][1] + length)  # one bar while playback is continuous
        else:
            playing.append((start, length))
        play_end = start + length
    return playing, dry


def plot_over_time(recorder: LatencyRecorder, path: Path, started: float, ended: float, caption: str = "",
                   slo_ttfa_ms: float | None = None) -> Figure:
    """Four panels over the run: TTFA percentiles, active users, audio-seconds produced per second,
    underruns per interval (Locust's charts, for the numbers of a voice agent)."""
    t = over_time(recorder, started, ended)
    fig, axes = plt.subplots(4, 1, figsize=(11, 9), sharex=True)
    width = t.interval_s
    ax = axes[0]
    ax.plot(t.starts, t.ttfa_p50, label="p50", color="tab:blue", marker=".")
    ax.plot(t.starts, t.ttfa_p95, label="p95", color="tab:orange", marker=".")
    ax.plot(t.starts, t.ttfa_max, label="max", color="tab:red", linewidth=0.8, alpha=0.6)
    if slo_ttfa_ms:
        ax.axhline(slo_ttfa_ms, color="red", linestyle="--", linewidth=0.8, label=f"SLO p95 {slo_ttfa_ms:g} ms")
    ax.set_ylabel("TTFA (ms)")
    ax.set_title(f"Time to first audio per {width:g} s interval", fontsize=9)
    ax.legend(loc="upper left", fontsize=8, ncol=4)
    axes[1].step(t.starts, t.active_users, where="post", color="tab:purple")
    axes[1].set_ylabel("active users")
    axes[1].set_title("Users running (each holds at most one session)", fontsize=9)
    axes[2].bar(t.starts, t.audio_s_per_s, width=width, align="edge", color="tab:green", alpha=0.7)
    axes[2].set_ylabel("audio s per s")
    axes[2].set_title("Audio produced: seconds of speech completed per second of the run", fontsize=9)
    axes[3].bar(t.starts, t.underruns, width=width, align="edge", color="tab:red", alpha=0.8)
    axes[3].set_ylabel(f"underruns / {width:g} s")
    axes[3].set_title("Playback underruns per interval", fontsize=9)
    axes[3].set_xlabel("seconds from the start of the run")
    for a in axes:
        a.grid(True, alpha=0.3)
        a.set_ylim(bottom=0)
    if all(math.isnan(v) for v in t.ttfa_p50):
        axes[0].text(0.5, 0.5, "no samples", ha="center", va="center", transform=axes[0].transAxes)
    fig.suptitle("The run over time")
    return _saved(fig, path, caption)


def plot_timeline(trace: dict[str, Any], path: Path, caption: str = "") -> Figure:
    """One session, a row per message: text sent, playback from the first frame in real time,
    the moments the player runs dry (underruns), and synthesis_complete."""
    messages = trace["messages"]
    fig, ax = plt.subplots(figsize=(11, 1.4 + 0.5 * len(messages)))
    underruns = 0
    for row, m in enumerate(messages):
        y = len(messages) - row
        playing, dry = playback_spans(m["frames"], m.get("sample_rate", 24000))
        underruns += len(dry)
        ax.broken_barh(playing, (y - 0.3, 0.3), color="tab:green")
        if dry:
            ax.broken_barh(dry, (y - 0.3, 0.3), color="tab:red")
            ax.scatter([start for start, _ in dry], [y - 0.15] * len(dry), marker="x", color="tab:red", zorder=3)
        ax.plot([m["sent"]], [y], marker="v", color="tab:blue")
        if m["completed"] is not None:
            ax.plot([m["completed"]], [y - 0.15], marker="|", markersize=14, color="black")
        label = m["text"] if len(m["text"]) <= 60 else m["text"][:57] + "..."
        ax.text(m["sent"], y + 0.12, label, fontsize=7)
    for start in trace.get("turn_starts", []):
        ax.axvline(start, color="grey", linestyle=":", linewidth=0.8)
    ax.set_yticks([len(messages) - row - 0.15 for row in range(len(messages))],
                  [f"message {row + 1}" for row in range(len(messages))], fontsize=8)
    ax.set_ylabel("message on the session")
    ax.set_ylim(0.4, len(messages) + 0.7)
    ax.set_xlabel("seconds from session start")
    ax.set_title(f"Session timeline ({underruns} underruns): \u25bc text sent, green: audio playing from its "
                 "first frame, red \u00d7: player ran dry, |: synthesis_complete, dotted: turn start", fontsize=9)
    return _saved(fig, path, caption, caption_height=0.05)


def plot_sweep(result: dict[str, Any], path: Path, caption: str = "") -> Figure:
    """p95 TTFA by concurrency step, the SLO line, and the answer."""
    steps = result["steps"]
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = [s["users"] for s in steps]
    ys = [s["ttfa_p95_ms"] if s["ttfa_p95_ms"] is not None else float("nan") for s in steps]
    colors = ["tab:green" if s["passed"] else "tab:red" for s in steps]
    ax.plot(xs, ys, color="grey", linewidth=1)
    ax.scatter(xs, ys, c=colors, zorder=3)
    limit = result["slo"].get("ttfa_p95_ms")
    if limit:
        ax.axhline(limit, color="red", linestyle="--", label=f"SLO p95 TTFA {limit:g} ms")
    if result["holds_sessions"]:
        ax.axvline(result["holds_sessions"], color="tab:green", linestyle=":", label=result["sentence"])
    ax.set_xlabel("concurrent sessions")
    ax.set_ylabel("p95 TTFA (ms)")
    ax.set_title(result["sentence"])
    ax.legend(loc="upper left")
    ax.grid(True, alpha=0.3)
    return _saved(fig, path, caption)


def write_reports(folder: str | Path, recorder: LatencyRecorder, summary: dict[str, Any],
                  sweep: Any = None, window: tuple[float, float] | None = None) -> list[Path]:
    """Write everything into `folder`; returns the files written. `window` (the run's wall-clock start
    and end) adds the chart over time."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    caption = settings_caption(summary.get("settings"))
    slo_ttfa = summary["slo"].get("ttfa_p95_ms")
    written = [out / "summary.json"]
    write_summary(summary, written[0])
    plot_cdf(recorder, out / "latency_cdf.png", slo_ttfa, caption)
    written.append(out / "latency_cdf.png")
    if window is not None:
        plot_over_time(recorder, out / "over_time.png", *window, caption=caption, slo_ttfa_ms=slo_ttfa)
        written.append(out / "over_time.png")
    if recorder.traces:
        plot_timeline(max(recorder.traces, key=_underruns_in), out / "session_timeline.png", caption)
        written.append(out / "session_timeline.png")
    if sweep is not None:
        plot_sweep(sweep.result(), out / "capacity_sweep.png", caption)
        written.append(out / "capacity_sweep.png")
    return written


def _underruns_in(trace: dict[str, Any]) -> int:
    """Dry spans in a trace: the timeline shows the kept session that stalled most."""
    return sum(len(playback_spans(m["frames"], m.get("sample_rate", 24000))[1]) for m in trace["messages"])
