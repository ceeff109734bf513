"""What a capacity sweep prints and writes: one line per step, the markdown tables, the JSON and the plot.

Beside the latency table (held figure, TTFA and audible TTFA per session count, underruns, errors,
load average), two more per configuration and session count: the scheduler's *decisions* (picks,
the share contested, the share that differed from round-robin, queue depth) and *demand against
capacity* (:mod:`bidi_tts_loadtest.capacity.step`); and, when timed and onnx configurations ran
side by side, predicted against measured.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from bidi_tts_loadtest.capacity.held import held, held_cell, missed_below
from bidi_tts_loadtest.capacity.step import StepResult


def step_line(step: StepResult) -> str:
    """The one line printed as each step ends."""
    cap = step.capacity
    return (f"{step.config:>18} n={step.sessions} turns={len(step.turns)} ttfa p50/p95="
            f"{_ms(step.ttfa_ms(50))}/{_ms(step.ttfa_ms(95))} ms audible p50/p95="
            f"{_ms(step.ttfa_audible_ms(50))}/{_ms(step.ttfa_audible_ms(95))} ms underruns={step.underruns} "
            f"errors={step.errors} audio/s={step.audio_per_wall_s:.2f} "
            f"demand@0={step.demand(0.0):.2f} capacity={'-' if cap is None else f'{cap:.2f}'} "
            f"decisions={step.decisions()} "
            f"load={step.load_before:.1f}->{step.load_after:.1f}")


def payload(steps: list[StepResult], slo_ms: float, cpus: int | None, basis: str) -> dict[str, Any]:
    """Every step's numbers and each configuration's held figure (``--json``)."""
    by_config = {c: [s for s in steps if s.config == c] for c in dict.fromkeys(s.config for s in steps)}
    return {"slo_ttfa_ms": slo_ms, "cpus": cpus, "ttfa_basis": basis,
            "held": {c: {"sessions": held(mine, slo_ms),
                         "missed_below": missed_below(mine, slo_ms)} for c, mine in by_config.items()},
            "steps": [{**asdict(s), "p50_ms": s.ttfa_ms(50), "p95_ms": s.ttfa_ms(95),
                       "ttfa_audible_ms": {"p50": s.ttfa_audible_ms(50), "p95": s.ttfa_audible_ms(95)},
                       "audio_per_wall_s": s.audio_per_wall_s, "busy": s.busy, "capacity": s.capacity,
                       "demand_ttfa0": s.demand(0.0), "demand_slo": s.demand(slo_ms / 1000)}
                      for s in steps]}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def table(steps: list[StepResult], slo_ms: float, focus: tuple[int, ...] = (1, 2, 4)) -> str:
    """The side-by-side table (markdown): one row per configuration."""
    configs = list(dict.fromkeys(s.config for s in steps))
    head = ["config", f"held @ p95<{slo_ms:.0f} ms"]
    head += [f"TTFA p50/p95 @{n} (ms)" for n in focus]
    head += [f"audible TTFA p50/p95 @{n} (ms)" for n in focus]
    head += ["underruns (all steps)", "errors", f"audio s/s @{max(focus)}", "load avg 1m (min-max)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config in configs:
        mine = [s for s in steps if s.config == config]
        by_n = {s.sessions: s for s in mine}
        cells = [config, held_cell(mine, slo_ms)]
        for n in focus:
            s = by_n.get(n)
            cells.append("-" if s is None else f"{_ms(s.ttfa_ms(50))} / {_ms(s.ttfa_ms(95))}")
        for n in focus:
            s = by_n.get(n)
            cells.append("-" if s is None else f"{_ms(s.ttfa_audible_ms(50))} / {_ms(s.ttfa_audible_ms(95))}")
        top = by_n.get(max(focus))
        loads = [x for s in mine for x in (s.load_before, s.load_after)]
        cells += [str(sum(s.underruns for s in mine)), str(sum(s.errors for s in mine)),
                  "-" if top is None else f"{top.audio_per_wall_s:.2f}",
                  f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def decisions_table(steps: list[StepResult], focus: tuple[int, ...] = (1, 2, 4)) -> str:
    """Per configuration and session count: picks / contested / differed from round-robin / depth."""
    configs = list(dict.fromkeys(s.config for s in steps))
    head = ["config"] + [f"@{n}: picks / contested / differed / depth mean (max)" for n in focus]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config in configs:
        by_n = {s.sessions: s for s in steps if s.config == config}
        rows.append("| " + " | ".join([config] + [by_n[n].decisions() if n in by_n else "-" for n in focus]) + " |")
    return "\n".join(rows)


def demand_table(steps: list[StepResult], slo_ms: float, focus: tuple[int, ...] = (1, 2, 4)) -> str:
    """Per configuration and session count: listeners' demand against production and capacity."""
    configs = list(dict.fromkeys(s.config for s in steps))
    head = ["config", "sessions", "turn audio s", f"demand @TTFA 0 / {slo_ms / 1000:g} s",
            "produced", "workers busy", "capacity (busy)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config in configs:
        for step in sorted((s for s in steps if s.config == config and s.sessions in focus), key=lambda s: s.sessions):
            busy, cap = step.busy, step.capacity
            rows.append("| " + " | ".join([
                config, str(step.sessions), f"{step.turn_audio_s:.1f}",
                f"{step.demand(0.0):.2f} / {step.demand(slo_ms / 1000):.2f}", f"{step.audio_per_wall_s:.2f}",
                "-" if busy is None else f"{100 * busy:.0f}%", "-" if cap is None else f"{cap:.2f}",
            ]) + " |")
    return "\n".join(rows)


def compare_table(steps: list[StepResult]) -> str:
    """Predicted (timed backend) against measured (the same configuration on onnx), per session count."""
    rows = ["| config | sessions | measured TTFA p50 / p95 (ms) | predicted p50 / p95 (ms) | p50 / p95 ratio "
            "| underruns measured / predicted | audio s per turn measured / predicted "
            "| audio-s/s measured / predicted |",
            "|---|---|---|---|---|---|---|---|"]
    for timed in dict.fromkeys(s.config for s in steps if s.config.startswith("timed:")):
        real = timed.split(" ", 1)[1]
        for n in sorted({s.sessions for s in steps if s.config == timed}):
            p = [s for s in steps if s.config == timed and s.sessions == n]
            m = [s for s in steps if s.config == real and s.sessions == n]
            if not p or not m:
                continue
            ps, ms = p[-1], m[-1]
            ratios = []
            for q in (50, 95):
                pv, mv = ps.ttfa_ms(q), ms.ttfa_ms(q)
                ratios.append("-" if not pv or not mv else f"{pv / mv:.2f}")
            rows.append(f"| {real} | {n} | {_ms(ms.ttfa_ms(50))} / {_ms(ms.ttfa_ms(95))} | "
                        f"{_ms(ps.ttfa_ms(50))} / {_ms(ps.ttfa_ms(95))} | {' / '.join(ratios)} | "
                        f"{ms.underruns} / {ps.underruns} | {ms.turn_audio_s:.1f} / {ps.turn_audio_s:.1f} | "
                        f"{ms.audio_per_wall_s:.2f} / {ps.audio_per_wall_s:.2f} |")
    return "\n".join(rows)


def plot(steps: list[StepResult], path: Path, slo_ms: float) -> None:
    """TTFA p95 and underruns against sessions, one line per configuration (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for config in dict.fromkeys(s.config for s in steps):
        mine = sorted((s for s in steps if s.config == config), key=lambda s: s.sessions)
        xs = [s.sessions for s in mine]
        top.plot(xs, [s.ttfa_ms(95) or float("nan") for s in mine], marker="o", label=config)
        bottom.plot(xs, [s.underruns for s in mine], marker="o", label=config)
    top.axhline(slo_ms, color="grey", linestyle="--", linewidth=1)
    top.set_yscale("log")
    top.set_ylabel(f"TTFA p95 (ms, per {mine[0].basis if steps else 'turn'})")
    bottom.set_ylabel("underruns (turns' stalls > 50 ms)")
    bottom.set_xlabel("LLM-paced sessions")
    bottom.set_xscale("log", base=2)
    top.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
