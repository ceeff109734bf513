"""Reports: the pinned JSON (one entry per case), an h2spec-like summary table, an optional HTML page."""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bidi_tts_conformance.model import Case, CaseResult, Verdict


@dataclass(slots=True)
class Entry:
    """One case as reported: the pinned fields plus a few extras for people."""

    case: Case
    outcome: str  # "passed" | "failed" | "skipped"
    verdict: str
    detail: str
    expected: str | None = None
    actual: str | None = None
    duration_s: float = 0.0
    notes: tuple[str, ...] = ()

    @classmethod
    def from_result(cls, result: CaseResult, outcome: str) -> Entry:
        detail = result.detail
        if result.notes:
            detail = f"{detail}; " if detail else ""
            detail += "noted, not judged here: " + " | ".join(result.notes)
        return cls(result.case, outcome, result.verdict.value, detail, result.expected, result.actual,
                   round(result.duration_s, 3), tuple(result.notes))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "clauses": list(self.case.clauses),
            "outcome": self.outcome,
            "verdict": self.verdict,
            "detail": self.detail,
            "description": self.case.description,
            "expectation": self.case.expectation,
            "expected": self.expected,
            "actual": self.actual,
            "duration_s": self.duration_s,
            "notes": list(self.notes),
        }


def write_json(path: Path, entries: Iterable[Entry]) -> None:
    """The pinned report: a JSON list, one object per case, in case order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([e.to_json() for e in entries], indent=2, ensure_ascii=False) + "\n")


def summary_lines(entries: list[Entry]) -> list[str]:
    """A readable table (case, verdict, clauses), then expected-vs-actual for each failure."""
    lines = []
    id_w = max([len(e.case.id) for e in entries] + [4])
    for e in entries:
        clauses = ",".join(e.case.clauses)
        note = "" if e.verdict in (Verdict.OK, Verdict.FAILED) else f"  {e.detail}"
        lines.append(f"{e.case.id:<{id_w}}  {e.verdict:<13}  {clauses}{note}")  # never cut the note
    failed = [e for e in entries if e.verdict == Verdict.FAILED]
    if failed:
        lines.append("")
        lines.append("Failures:")
        for e in failed:
            lines.append(f"  {e.case.id}: {e.case.description}  [{', '.join(e.case.clauses)}]")
            lines.append(f"    expected: {e.expected or e.case.expectation}")
            lines.append(f"    actual:   {e.actual or '-'}")
            lines.append(f"    detail:   {e.detail}")
    counts = Counter(e.verdict for e in entries)
    lines.append("")
    lines.append("  ".join(f"{v}: {counts[v]}" for v in [*Verdict] if counts[v]))
    return lines


def write_html(path: Path, entries: list[Entry], title: str) -> None:
    """A one-page HTML table of the run (optional --conformance-html)."""
    colors = {"OK": "#cfc", "NON-STRICT": "#ffc", "FAILED": "#fcc", "INFORMATIONAL": "#cef",
              "SKIPPED": "#eee"}
    rows = "\n".join(
        f"<tr style='background:{colors.get(e.verdict, '#fff')}'><td>{html.escape(e.case.id)}</td>"
        f"<td>{html.escape(e.verdict)}</td><td>{html.escape(', '.join(e.case.clauses))}</td>"
        f"<td>{html.escape(e.case.description)}</td><td>{html.escape(e.detail)}</td></tr>"
        for e in entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif}td,th{padding:2px 8px;vertical-align:top}</style>"
        f"<h1>{html.escape(title)}</h1><table><tr><th>case</th><th>verdict</th><th>clauses</th>"
        f"<th>description</th><th>detail</th></tr>\n{rows}\n</table>\n")
