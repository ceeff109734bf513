"""Report folder: latency CDF, a session timeline, the capacity sweep (PNG) and the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display on load-test machines
import matplotlib.pyplot as plt

from bidi_tts.metrics import LatencyRecorder
from bidi_tts_loadtest.summary import COMPLETE, GAP, TTFA, TURN_TTFA, write_summary

#: One CDF panel per metric: (title, [(series, label)]).
CDF_PANELS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Time to first audio", ((TTFA, "per message"), (TURN_TTFA, "per turn (from the LLM's start)"))),
    ("Message complete", ((COMPLETE, "synthesis_complete"),)),
    ("Gap between audio frames", ((GAP, "frame gap"),)),
)


def plot_cdf(recorder: LatencyRecorder, path: Path, slo_ttfa_ms: float | None = None) -> None:
    """Empirical CDFs, one panel per metric, each on its own millisecond axis."""
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
        ax.axhline(0.95, color="grey", linewidth=0.5)
        ax.set_title(title)
        ax.set_xlabel("milliseconds")
        ax.set_ylim(0, 1.02)
        ax.grid(True, alpha=0.3)
        if drawn:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=8, frameon=False)
        else:
            ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes)
    axes[0][0].set_ylabel("share of samples at or below")
    fig.suptitle("Latency CDFs (exact samples)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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


def plot_timeline(trace: dict[str, Any], path: Path) -> None:
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
    ax.set_yticks([])
    ax.set_ylim(0.4, len(messages) + 0.7)
    ax.set_xlabel("seconds from session start")
    ax.set_title(f"Session timeline ({underruns} underruns): \u25bc text sent, green: audio playing from its "
                 "first frame, red \u00d7: player ran dry, |: synthesis_complete, dotted: turn start", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_sweep(result: dict[str, Any], path: Path) -> None:
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
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_reports(folder: str | Path, recorder: LatencyRecorder, summary: dict[str, Any],
                  sweep: Any = None) -> list[Path]:
    """Write everything into `folder`; returns the files written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "summary.json"]
    write_summary(summary, written[0])
    plot_cdf(recorder, out / "latency_cdf.png", summary["slo"].get("ttfa_p95_ms"))
    written.append(out / "latency_cdf.png")
    if recorder.traces:
        plot_timeline(max(recorder.traces, key=_underruns_in), out / "session_timeline.png")
        written.append(out / "session_timeline.png")
    if sweep is not None:
        plot_sweep(sweep.result(), out / "capacity_sweep.png")
        written.append(out / "capacity_sweep.png")
    return written


def _underruns_in(trace: dict[str, Any]) -> int:
    """Dry spans in a trace: the timeline shows the kept session that stalled most."""
    return sum(len(playback_spans(m["frames"], m.get("sample_rate", 24000))[1]) for m in trace["messages"])
