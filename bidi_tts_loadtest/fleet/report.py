"""The fleet simulation's report: per-window rows, totals, the verdict, the JSON and the plot.

A plan PASSES when, in every window outside the declared surge window, p95 TTFA <= SLO and nothing was
refused; the surge window runs from the surge's start to start + the plan's scale-out time (detection
lag and launch) + one window (the time the autoscaler needs, at best, to bring capacity in). Every
output says "simulation" and where the curve came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bidi_tts.metrics import percentile
from bidi_tts_loadtest.fleet.engine import Result, Setup

LABEL = "SIMULATION (not a measurement)"


@dataclass(frozen=True, slots=True)
class Meta:
    plan_path: str
    curve_source: str
    trace_name: str
    slo_ms: float
    scale_k: float        # the fleet simulated is 1/k of the real one (load, min and max divided by k)
    price_per_hour: float
    statistic: str


def surge_window(setup: Setup) -> tuple[float, float] | None:
    s = setup.trace.surge_start_s
    return None if s is None else (s, s + setup.detection_lag_s + setup.scale_out_s + setup.window_s)


def _inside(surge: tuple[float, float] | None, t0: float, t1: float) -> bool:
    return surge is not None and t0 < surge[1] and t1 > surge[0]


class FailureWatch:
    """A watch (:data:`~bidi_tts_loadtest.fleet.engine.Watch`) that stops a run once its verdict is FAIL for sure.

    A window outside the surge window fails when it refused a request (final the moment it happens) or
    when its p95 TTFA is above the SLO (final once every request that arrived in it has finished, under
    session load once the window is over). The run stops at the first autoscaler sample that sees
    either; the windows after it are not simulated, so a stopped run's report says FAIL, as the whole
    run's would, with the failing windows seen up to the stop (the whole run's first ones, or fewer).
    """

    def __init__(self, setup: Setup, slo_ms: float) -> None:
        self.setup, self.slo_ms = setup, slo_ms
        self.surge = surge_window(setup)
        self._refusals_from = 0   # windows before this one refused nothing outside the surge window
        self._p95_from = 0        # windows before this one have a final p95 within the SLO (or inside the surge)

    def __call__(self, now: float, res: Result) -> bool:
        win, size = res.windows, self.setup.window_s
        current = min(int(now / size), len(win.refused) - 1)
        for w in range(self._refusals_from, current + 1):
            if win.refused[w] and not _inside(self.surge, w * size, (w + 1) * size):
                return True
        self._refusals_from = current
        while self._p95_from < current:
            w = self._p95_from
            if self.setup.load == "request" and win.served[w] + win.refused[w] < win.arrived[w]:
                break  # requests of this window still queued
            lats = win.latencies[w]
            if (lats and max(lats) > self.slo_ms and not _inside(self.surge, w * size, (w + 1) * size)
                    and percentile(lats, 95) > self.slo_ms):
                return True
            self._p95_from += 1
        return False


def build(setup: Setup, res: Result, meta: Meta) -> dict[str, Any]:
    win = res.windows
    surge = surge_window(setup)
    rows, failing = [], []
    k = meta.scale_k
    for w, lats in enumerate(win.latencies):
        t0, t1 = w * setup.window_s, (w + 1) * setup.window_s
        p95 = percentile(lats, 95) if lats else None
        inside = _inside(surge, t0, t1)
        broken = []
        if p95 is not None and p95 > meta.slo_ms:
            broken.append("p95")
        if win.refused[w]:
            broken.append("refused")
        rows.append({
            "t0_s": t0, "t1_s": t1, "load": setup.trace.at((t0 + t1) / 2) * k,
            "p95_ttfa_ms": None if p95 is None or math.isinf(p95) else round(p95, 1),
            "unfinished": sum(1 for v in lats if math.isinf(v)),
            "served": win.served[w] * k, "refused": win.refused[w] * k, "dropped": win.dropped[w] * k,
            "over_curve": win.over_curve[w] * k,
            "in_service": win.in_service[w] * k, "starting": win.starting[w] * k,
            "in_surge_window": inside, "broken": broken,
        })
        if broken and not inside:
            failing.append(w)
    served = sum(win.served) * k
    refused = sum(win.refused) * k
    instance_h = res.instance_s / 3600.0 * k
    unit = "requests" if setup.load == "request" else "sessions"
    verdict = "PASS" if not failing else "FAIL"
    return {
        "kind": "bidi-tts-fleet-simulation", "version": 1,
        "simulation": LABEL,
        "curve_source": meta.curve_source, "plan": meta.plan_path, "trace": meta.trace_name,
        "load": setup.load, "unit": unit, "slo_ms": meta.slo_ms, "window_s": setup.window_s,
        "seed": setup.seed, "statistic": meta.statistic,
        "scale_down": {"k": k, "note": (f"simulated 1/{k:g} of the fleet: load, min and max divided by {k:g} "
                                        "(per-instance numbers and thresholds unchanged); counts below are "
                                        "multiplied back") if k != 1 else "full fleet simulated"},
        "surge_window_s": list(surge) if surge else None,
        "scaling": {"launch_s": setup.scale_out_s, "detection_lag_s": setup.detection_lag_s,
                    "one_activity_at_a_time": True,
                    "scale_outs": [[t, n * k] for t, n in res.scale_outs], "scale_ins_s": list(res.scale_ins)},
        "verdict": verdict,
        "settled_at_s": res.settled_at_s,  # None: the whole trace; else where a FAIL became certain and the run stopped
        "failing_windows": [{"t0_s": rows[w]["t0_s"], "broken": rows[w]["broken"],
                             "p95_ttfa_ms": rows[w]["p95_ttfa_ms"], "refused": rows[w]["refused"]} for w in failing],
        "totals": {
            "instance_hours": round(instance_h, 3), "cost_usd": round(instance_h * meta.price_per_hour, 2),
            "price_per_hour": meta.price_per_hour,
            "served": served, "refused": refused,
            "dropped_sessions": sum(win.dropped) * k,
            # a request counted "refused" (sessions: turn TTFA beyond the curve) is part of the verdict
            "turns_over_curve": sum(win.over_curve) * k,
            "unfinished": res.unfinished * k, "events": res.events,
            "scale_outs": len(res.scale_outs), "scale_ins": len(res.scale_ins),
            "peak_instances": max((a + b for a, b in zip(win.in_service, win.starting, strict=True)), default=0) * k,
        },
        "windows": rows,
        "datapoints": [{"t_s": t, "in_service": n * k, "starting": s * k, "metric": round(m, 3)}
                       for t, n, s, m in res.samples],
    }


def text(report: dict[str, Any]) -> str:
    t = report["totals"]
    lines = [
        f"fleet {report['simulation']}: {report['load']} load, trace {report['trace']}, seed {report['seed']}",
        f"  instance curve from: {report['curve_source']}",
        f"  {report['scale_down']['note']}",
    ]
    sw = report["surge_window_s"]
    lines.append(f"  surge window: {sw[0]:.0f}-{sw[1]:.0f} s (surge start to + scale-out + one window)" if sw
                 else "  surge window: none declared")
    lines.append(f"  {'t_s':>6} {'load':>9} {'p95_ms':>9} {'served':>8} {'refused':>8} {'dropped':>8} "
                 f"{'serving':>8} {'starting':>8}")
    for r in report["windows"]:
        p95 = "-" if r["p95_ttfa_ms"] is None else (f"{r['p95_ttfa_ms']:.0f}" if not r["unfinished"] else "unfin.")
        mark = " S" if r["in_surge_window"] else ""
        mark += " <- " + "+".join(r["broken"]) if r["broken"] else ""
        lines.append(f"  {r['t0_s']:>6.0f} {r['load']:>9.1f} {p95:>9} {r['served']:>8.0f} {r['refused']:>8.0f} "
                     f"{r['dropped']:>8.0f} {r['in_service']:>8.0f} {r['starting']:>8.0f}{mark}")
    lines.append(f"  instance-hours {t['instance_hours']:.2f}, cost ${t['cost_usd']:.2f} at ${t['price_per_hour']}/h; "
                 f"served {t['served']:.0f}, refused {t['refused']:.0f} {report['unit']}, "
                 f"dropped sessions {t['dropped_sessions']:.0f}, peak instances {t['peak_instances']:.0f}")
    if t["turns_over_curve"]:
        lines.append(f"  overload: {t['turns_over_curve']:.0f} turns beyond the curve's largest level (extrapolated)")
    if report["verdict"] == "PASS":
        lines.append(f"{report['verdict']} ({report['simulation']}): p95 <= {report['slo_ms']:g} ms and nothing "
                     "refused in every window outside the surge window")
    else:
        names = ", ".join(f"{f['t0_s']:.0f}s({'+'.join(f['broken'])})" for f in report["failing_windows"][:12])
        more = len(report["failing_windows"]) - 12
        lines.append(f"FAIL ({report['simulation']}): {len(report['failing_windows'])} windows outside the surge "
                     f"window broke the SLO of {report['slo_ms']:g} ms or refused: {names}"
                     + (f" and {more} more" if more > 0 else ""))
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["windows"]
    mid = [(r["t0_s"] + r["t1_s"]) / 2 / 60 for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(7, 6), sharex=True, dpi=80)
    axes[0].plot(mid, [r["load"] for r in rows], color="black")
    axes[0].set_ylabel("requests/s" if report["load"] == "request" else "sessions")
    p95 = [r["p95_ttfa_ms"] if r["p95_ttfa_ms"] is not None else float("nan") for r in rows]
    axes[1].plot(mid, p95, color="tab:blue", label="p95 TTFA")
    axes[1].axhline(report["slo_ms"], color="tab:red", linestyle="--", label="SLO")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("p95 TTFA (ms)")
    refused = [i for i, r in enumerate(rows) if r["refused"]]
    if refused:
        axes[1].plot([mid[i] for i in refused], [report["slo_ms"]] * len(refused), "x", color="tab:red",
                     label="refused")
    axes[1].legend(loc="upper left", fontsize=7)
    dp = report["datapoints"]
    axes[2].plot([d["t_s"] / 60 for d in dp], [d["in_service"] for d in dp], color="tab:green", label="in service")
    axes[2].plot([d["t_s"] / 60 for d in dp], [d["starting"] for d in dp], color="tab:orange", label="starting")
    axes[2].set_ylabel("instances")
    axes[2].set_xlabel("minutes")
    axes[2].legend(loc="upper left", fontsize=7)
    sw = report["surge_window_s"]
    for ax in axes:
        if sw:
            ax.axvspan(sw[0] / 60, sw[1] / 60, color="grey", alpha=0.2)
    fig.suptitle(f"{report['simulation']}: {report['verdict']}\ncurve: {report['curve_source'][:90]}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
