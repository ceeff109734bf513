"""Report folder: latency CDF, a session timeline, the capacity sweep (PNG) and the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display on load-test machines
import matplotlib.pyplot as plt

from bidi_tts.metrics import LatencyRecorder
from loadtest.summary import COMPLETE, GAP, TTFA, TURN_TTFA, write_summary


def plot_cdf(recorder: LatencyRecorder, path: Path, slo_ttfa_ms: float | None = None) -> None:
    """Empirical CDFs of TTFA, turn TTFA, completion time and inter-frame gaps (log-x)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, label in ((TTFA, "TTFA"), (TURN_TTFA, "turn TTFA"), (COMPLETE, "complete"), (GAP, "frame gap")):
        xs = sorted(v for v in recorder.values(name) if v > 0)
        if xs:
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.step(xs, ys, where="post", label=f"{label} (n={len(xs)})")
    if slo_ttfa_ms:
        ax.axvline(slo_ttfa_ms, color="red", linestyle="--", label=f"SLO p95 TTFA {slo_ttfa_ms:g} ms")
    ax.axhline(0.95, color="grey", linewidth=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("milliseconds")
    ax.set_ylabel("share of samples at or below")
    ax.set_title("Latency CDF (exact samples)")
    ax.legend(loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_timeline(trace: dict[str, Any], path: Path) -> None:
    """One session: when each sentence was sent, its audio frames, and the playback of that audio."""
    messages = trace["messages"]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * len(messages)))
    for row, m in enumerate(messages):
        y = len(messages) - row
        ax.plot([m["sent"]], [y], marker="v", color="tab:blue")
        rate = m.get("sample_rate", 24000)
        frames = m["frames"]
        for at, size in frames:
            ax.plot([at, at + size / (2 * rate)], [y - 0.15, y - 0.15], color="tab:green", linewidth=4,
                    solid_capstyle="butt")
        if frames:
            ax.scatter([f[0] for f in frames], [y + 0.15] * len(frames), s=8, color="black", zorder=3)
        if m["completed"] is not None:
            ax.plot([m["completed"]], [y], marker="|", markersize=14, color="tab:red")
        label = m["text"] if len(m["text"]) <= 40 else m["text"][:37] + "..."
        ax.text(m["sent"], y + 0.3, label, fontsize=7)
    for start in trace.get("turn_starts", []):
        ax.axvline(start, color="grey", linestyle=":", linewidth=0.8)
    ax.set_yticks([])
    ax.set_xlabel("seconds from session start")
    ax.set_title("Session timeline: ▼ text sent, • audio frame arrives, ▬ its audio duration, | complete")
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
        plot_timeline(recorder.traces[0], out / "session_timeline.png")
        written.append(out / "session_timeline.png")
    if sweep is not None:
        plot_sweep(sweep.result(), out / "capacity_sweep.png")
        written.append(out / "capacity_sweep.png")
    return written
