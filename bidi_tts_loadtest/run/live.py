"""The web UI's "bidi-tts" tab: exact TTFA percentiles, underruns, goodput and failures while the run goes.

Uses Locust's web UI extension points: ``extended_tabs``/``extended_tables`` in the page's template
arguments, and ``extended_stats`` added to each ``/stats/requests`` answer the page polls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

TAB_KEY = "bidi-tts"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def live_rows(summary: dict[str, Any]) -> list[dict[str, str]]:
    """The tab's rows (metric, value) for a summary from :func:`loadtest.summary.build_summary`."""
    rows = [("sessions (completed / failed / cut)",
             f"{summary['sessions']} ({summary['sessions_completed']} / {summary['sessions_failed']} / "
             f"{summary['sessions_cut']})"),
            ("messages", str(summary["messages"])),
            ("errors (error rate)", f"{summary['errors']} ({summary['error_rate']:.2%})")]
    for key, label in (("ttfa_ms", "TTFA"), ("turn_ttfa_ms", "turn TTFA"), ("complete_ms", "complete")):
        t = summary[key]
        rows.append((f"{label} ms p50 / p90 / p95 / p99 / max",
                     " / ".join(_ms(t[p]) for p in ("p50", "p90", "p95", "p99", "max"))))
    rows.append(("underruns (stall ms)", f"{summary['underruns']} ({summary['underrun_stall_ms']:.0f})"))
    goodput = summary["goodput"]
    rows.append(("goodput (sessions meeting the SLO)", "-" if goodput is None else f"{goodput:.1%}"))
    for cause, count in summary["failures"].items():
        rows.append((f"failed: {cause}", str(count)))
    if summary["slo_broken"]:
        rows.append(("SLO broken", "; ".join(summary["slo_broken"])))
    return [{"metric": metric, "value": value} for metric, value in rows]


def install_web_ui(environment: Any, summary: Callable[[], dict[str, Any]]) -> None:
    """Add the tab to `environment.web_ui`; `summary` builds the current summary on demand."""
    from flask import request

    web_ui = environment.web_ui
    web_ui.template_args["extended_tabs"] = [{"title": "bidi-tts", "key": TAB_KEY}]
    web_ui.template_args["extended_tables"] = [{"key": TAB_KEY, "structure": [
        {"key": "metric", "title": "Metric"}, {"key": "value", "title": "Value (exact)"}]}]

    @web_ui.app.after_request
    def _extend_stats(response: Any) -> Any:
        if request.path != "/stats/requests" or not response.is_json:
            return response
        body = response.get_json()
        body["extended_stats"] = [{"key": TAB_KEY, "data": live_rows(summary())}]
        response.set_data(json.dumps(body))
        return response
