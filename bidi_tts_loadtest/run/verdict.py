"""The block a load run ends with, after Locust's tables: its settings, key numbers, each threshold
held or broken, and the exit code (k6's end-of-test summary is the model)."""

from __future__ import annotations

import re
from typing import Any

HELD, BROKE = "\u2713", "\u2717"
_PERCENTILE = re.compile(r"^(?P<metric>.+)_(?P<p>p\d+)_ms$")


def threshold_rows(summary: dict[str, Any]) -> list[tuple[bool, str]]:
    """(held, text) for every --slo-* limit that is set, from the summary's own numbers."""
    rows: list[tuple[bool, str]] = []
    for name, limit in summary.get("slo", {}).items():
        if limit is None:
            continue
        held, value, op = _judge(summary, name, limit)
        shown = "nothing measured" if value is None else _fmt(value)
        rows.append((held, f"{name} {op} {limit:g}: {shown}"))
    return rows


def _judge(summary: dict[str, Any], name: str, limit: float) -> tuple[bool, float | None, str]:
    match = _PERCENTILE.match(name)
    if match:  # ttfa_p95_ms -> summary["ttfa_ms"]["p95"], and so for any metric a later option adds
        value = (summary.get(match["metric"] + "_ms") or {}).get(match["p"])
        return value is not None and value <= limit, value, "<="
    if name == "goodput":
        value = summary.get("goodput")
        return value is not None and value >= limit, value, ">="
    if name == "max_content_errors":
        value = summary.get("content_errors", 0)
        return value <= limit, value, "<="
    value = summary.get(name)
    if isinstance(value, int | float):
        return value <= limit, value, "<="
    return not summary.get("slo_broken"), None, "<="


def _fmt(value: float) -> str:
    return f"{value:g}" if isinstance(value, int) else f"{value:.4g}" if value < 1 else f"{value:.1f}"


def _ms(stats: dict[str, Any] | None) -> str:
    if not stats or stats.get("p50") is None:
        return "no samples"
    return "  ".join(f"{k} {stats[k]:.1f}" for k in ("p50", "p95", "p99", "max") if stats.get(k) is not None)


def verdict_lines(summary: dict[str, Any], exit_code: int | None = None) -> list[str]:
    """The closing block, one string per line."""
    s = summary
    settings = s.get("settings", {})
    lines = ["", "bidi-tts verdict " + "\u2500" * 60]
    if settings:
        target = settings.get("host") or f"endpoint {settings.get('endpoint_name')}"
        load = f"{settings.get('users')} users" if settings.get("users") is not None else "shape " + str(
            settings.get("shape"))
        lines.append(f"  target      {target}")
        lines.append(f"  load        {load}, spawn {settings.get('spawn_rate')}/s, run {settings.get('run_time_s')} s, "
                     f"shape {settings.get('shape')}; voice {settings.get('voice')}, "
                     f"{settings.get('tokens_per_second')} tokens/s")
    lines.append(f"  sessions    {s['sessions']} ({s['sessions_completed']} completed, {s['sessions_failed']} failed, "
                 f"{s['sessions_cut']} cut)  messages {s['messages']}  errors {s['errors']}  "
                 f"underruns {s['underruns']}")
    lines.append(f"  TTFA ms     {_ms(s.get('ttfa_ms'))}")
    lines.append(f"  complete ms {_ms(s.get('complete_ms'))}")
    lines.append(f"  frame gap   {_ms(s.get('gap_ms'))}")
    for cause, count in s.get("failures", {}).items():
        lines.append(f"  failed      {count} sessions: {cause}")
    rows = threshold_rows(s)
    if rows:
        lines.append("  thresholds")
        lines += [f"    {HELD if held else BROKE} {text}" for held, text in rows]
        if not s.get("slo_passed") and all(held for held, _ in rows):  # broken by what no limit names
            lines += [f"    {BROKE} {b}" for b in s.get("slo_broken", [])]
    code = "" if exit_code is None else f" (exit {exit_code})"
    if not rows:
        lines.append(f"  result      no --slo-* threshold set: nothing judged{code}")
    elif s.get("slo_passed"):
        lines.append(f"  result      every threshold held{code}")
    else:
        lines.append(f"  result      THRESHOLDS BROKEN: {'; '.join(s.get('slo_broken', []))}{code}")
    return lines
