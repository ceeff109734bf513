"""Locust's end-of-run tables without the "Aggregated" row when it would mix kinds of request.

The load test's rows are different things: a 40-second session, a 5 ms connect, a TTFA, a
synthesis_complete. Locust sums them into one "Aggregated" row whose percentiles mean nothing, and
people read that row first. While the project's request type is among the rows, the row is replaced
by a line that says why; the per-kind rows and the bidi-tts verdict after the tables carry the numbers.

Once the run is quitting, the periodic table (``print_stats(current=True)``, every 2 s in a headless
run) stays quiet: its greenlet is only asked to die and could print once more after the verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from locust import stats

REQUEST_TYPE = "TTS"  # the request_type the users fire (bidi_tts_loadtest.users)
OMITTED = "(no Aggregated row: the rows are different kinds - sessions, connects, TTFA - see the verdict below)"
_installed = False
_quitting = False


def mixes_kinds(request_stats: Any) -> bool:
    return any(method == REQUEST_TYPE for _, method in request_stats.entries)


def _without_total(original: Callable[..., list[str]]) -> Callable[..., list[str]]:
    def summary(request_stats: Any, *args: Any, **kwargs: Any) -> list[str]:
        lines = original(request_stats, *args, **kwargs)
        return [*lines[:-1], OMITTED] if mixes_kinds(request_stats) else lines

    return summary


def install_table_without_mixed_aggregate() -> None:
    """Wrap Locust's two table builders (print_stats looks them up at each call)."""
    global _installed
    if _installed:
        return
    _installed = True
    stats.get_stats_summary = _without_total(stats.get_stats_summary)
    original_percentiles = stats.get_percentile_stats_summary

    def percentiles(request_stats: Any) -> list[str]:
        lines = original_percentiles(request_stats)
        # Locust adds the total's percentile row last, only when it has response times
        if mixes_kinds(request_stats) and request_stats.total.response_times:
            return [*lines[:-1], OMITTED]
        return lines

    stats.get_percentile_stats_summary = percentiles  # type: ignore[assignment]
    original_print = stats.print_stats

    def print_stats(request_stats: Any, current: bool = True) -> None:
        if not (_quitting and current):
            original_print(request_stats, current)

    stats.print_stats = print_stats  # type: ignore[assignment]


def quiet_periodic_tables() -> None:
    """From now on only the final tables print (called when the run quits)."""
    global _quitting
    _quitting = True
