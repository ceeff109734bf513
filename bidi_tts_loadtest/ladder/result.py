"""A ladder's verdict over its rungs: Q_max per run, its bracketing, the minimum over runs; lines and table.

Q_max of one run is the largest *usable* level that meets the SLO (p95 TTFA at or under it; session
load: and no underrun). It is *bracketed* when a usable level above it was measured and failed;
otherwise it is only a lower bound (the true figure may be higher). Unusable rungs (the client was
the limit, errors, refusals) count for neither. A run with usable rungs of which none met the SLO has
Q_max 0 (bracketed by its lowest); a run with no usable rung has none. The ladder's Q_max is the
minimum over runs, its spread the largest minus the smallest, and it is bracketed only when every
run's is.
"""

from __future__ import annotations

import math
from typing import Any


def run_q_max(rungs: list[dict[str, Any]]) -> tuple[float | None, bool]:
    """(Q_max, bracketed) of one run's rungs."""
    usable = [r for r in rungs if r["usable"]]
    if not usable:
        return None, False
    passing = [r["level"] for r in usable if r["meets_slo"]]
    best = max(passing, default=0)
    bracketed = any(not r["meets_slo"] and r["level"] > best for r in usable)
    return best, bracketed


def result(rungs: list[dict[str, Any]], *, runs: int, load: str, loop: str) -> dict[str, Any]:
    """The ``result`` block of the ladder's JSON."""
    per_run: list[float | None] = []
    brackets: list[bool] = []
    for run in range(1, runs + 1):
        q, bracketed = run_q_max([r for r in rungs if r["run"] == run])
        per_run.append(q)
        brackets.append(bracketed)
    known = [q for q in per_run if q is not None]
    q_max = min(known) if known else None
    at = [r for r in rungs if r["usable"] and r["level"] == q_max and r["meets_slo"]]
    usable = [r for r in rungs if r["usable"]]
    lowest = [r for r in usable if loop == "closed" and r["level"] == 1 and r["ttfa_ms"]["mean"] is not None]
    chars = sum(r["chars"] for r in usable)
    done = sum(r["completed"] for r in usable)
    session_s = sum(r["concurrency_mean"] * r["window_s"] for r in usable)
    return {
        "q_max": q_max,
        "q_max_per_run": per_run,
        "q_max_spread": (max(known) - min(known)) if known else None,
        "bracketed": bool(known) and all(b for q, b in zip(per_run, brackets, strict=True) if q is not None),
        "bracketed_per_run": brackets,
        # The slowest run's figures at Q_max: the least throughput and the highest p95 seen there.
        "rps_at_q_max": min((r["achieved_rps"] for r in at), default=None),
        "ttfa_p95_at_q_max_ms": max((r["ttfa_ms"]["p95"] for r in at), default=None),
        "service_mean_ms": _mean([r["ttfa_ms"]["mean"] for r in lowest]),
        "service_p95_ms": _mean([r["ttfa_ms"]["p95"] for r in lowest]),
        "saturation_rps": max((r["achieved_rps"] for r in usable), default=None),
        "chars_per_request": (chars / done) if done and load == "request" else None,
        "chars_per_session_s": (chars / session_s) if session_s and load == "session" else None,
    }


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def start_line(run: int, runs: int, level: float, unit: str, hold_s: float, measure_s: float) -> str:
    return f"# run {run}/{runs}: level {level:g} {unit}, hold {hold_s:g} s (the last {measure_s:g} s measured)"


def rung_line(r: dict[str, Any], slo_ms: float) -> str:
    """One finished rung on screen."""
    verdict = "ok" if r["meets_slo"] else "OVER"
    if not r["meets_slo"] and r["underruns"] and r["unit"].startswith("sessions"):
        verdict += f" ({r['underruns']} underruns)"
    per = "turns/s" if r["unit"].startswith("sessions") else "rps"
    usable = "usable" if r["usable"] else f"UNUSABLE ({r['unusable_reason']})"
    lag = "-" if r["client_lag_ms_p95"] is None else f"{r['client_lag_ms_p95']:.1f}"
    return (f"run {r['run']} level {r['level']:g} {r['unit']}: {r['achieved_rps']:.2f} {per}, "
            f"in flight {r['concurrency_mean']:.2f}, TTFA p50/p95 {_ms(r['ttfa_ms']['p50'])}/"
            f"{_ms(r['ttfa_ms']['p95'])} ms, errors {r['errors']}, refused {r['refused']}, "
            f"unfinished {r['unfinished']}, "
            f"underruns {r['underruns']}, lag p95 {lag} ms, {verdict} (SLO {slo_ms:g}), {usable}")


def table(rungs: list[dict[str, Any]]) -> str:
    head = (f"{'run':>3} {'level':>7} {'rps':>7} {'inflight':>8} {'p50':>7} {'p95':>7} {'p99':>7} {'done':>6} "
            f"{'err':>4} {'ref':>4} {'under':>5} {'slo':>4} usable")
    lines = [head]
    for r in rungs:
        t = r["ttfa_ms"]
        lines.append(f"{r['run']:>3} {r['level']:>7g} {r['achieved_rps']:>7.2f} {r['concurrency_mean']:>8.2f} "
                     f"{_ms(t['p50']):>7} {_ms(t['p95']):>7} {_ms(t['p99']):>7} {r['completed']:>6} "
                     f"{r['errors']:>4} {r['refused']:>4} {r['underruns']:>5} {'ok' if r['meets_slo'] else 'OVER':>4} "
                     f"{'yes' if r['usable'] else 'no: ' + str(r['unusable_reason'])}")
    return "\n".join(lines)


def verdict_line(res: dict[str, Any], unit: str) -> str:
    if res["q_max"] is None:
        return "Q_max: none (no usable rung)"
    bound = "bracketed" if res["bracketed"] else "a LOWER BOUND (no usable rung above it failed)"
    runs = res["q_max_per_run"]
    spread = f", spread {res['q_max_spread']:g} over runs {runs}" if len(runs) > 1 else ""
    rps = "-" if res["rps_at_q_max"] is None else f"{res['rps_at_q_max']:.2f}"
    return (f"Q_max: {res['q_max']:g} {unit}, {bound}{spread}; at Q_max {rps} rps, TTFA p95 "
            f"{_ms(res['ttfa_p95_at_q_max_ms'])} ms; saturation {res['saturation_rps'] or 0:.2f} rps")
