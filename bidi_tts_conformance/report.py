"""Reports: the JSON report (run metadata around the pinned per-case entries), an h2spec-like summary
table, and the HTML pages (one for the run, one per case with its frames; see report_html.py).

The JSON report is an object (CONTRACT.md section 2 allows it)::

    {"suite": "bidi-tts-conformance", "version": "0.1.0", "format": 2,
     "target": {"kind", "label", "dialect", "url", "endpoint", "region", "endpoint_url", "image"},
     "started_at": "2025-01-01T12:00:00Z", "finished_at": "...", "duration_s": 12.3,
     "options": {"voice", "sample_rate", "strict", "cases", "target"},
     "timeouts": {"silence_allowed_s", "silence_allowed_from", "case_timeout_s", "case_timeout_from",
                  "calibrated", "end_silence_s", "calibration": {...} | null},
     "totals": {"cases": N, "outcomes": {"passed", "failed", "skipped"}, "verdicts": {"OK", ...}},
     "html_report": "conformance.html" | null,
     "cases": [{"id", "clauses", "outcome", "verdict", "detail", "description", "expectation",
                "expected", "actual", "duration_s", "notes", "frames", "case_page"}, ...]}

The frames themselves are only on the case pages (`frames` in the JSON counts them); paths in the
report (`html_report`, `case_page`) are relative to the JSON file's folder. :func:`load_report` reads
this shape and the older plain list of entries.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bidi_tts_conformance.model import Case, CaseResult, Verdict

if TYPE_CHECKING:
    from bidi_tts_conformance.runner import SuiteRunner
    from bidi_tts_conformance.targets import Target
    from bidi_tts_conformance.trace import FrameTrace

SUITE = "bidi-tts-conformance"
FORMAT = 2  # 1: the plain list of entries; 2: the object with metadata around "cases"
OUTCOMES = ("passed", "failed", "skipped")


def suite_version() -> str:
    try:
        return metadata.version("bidi-tts")
    except metadata.PackageNotFoundError:
        return "unknown"


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso_utc(moment: datetime) -> str:
    """ISO-8601 in UTC, to the millisecond, with a Z."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
    trace: FrameTrace | None = None
    case_page: str | None = None  # relative to the JSON report's folder, once a page is written

    @classmethod
    def from_result(cls, result: CaseResult, outcome: str) -> Entry:
        detail = result.detail
        if result.notes:
            detail = f"{detail}; " if detail else ""
            detail += "noted, not judged here: " + " | ".join(result.notes)
        return cls(result.case, outcome, result.verdict.value, detail, result.expected, result.actual,
                   round(result.duration_s, 3), tuple(result.notes), result.trace)

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
            "frames": self.trace.summary() if self.trace is not None else None,
            "case_page": self.case_page,
        }


@dataclass(slots=True)
class RunInfo:
    """What the report says about the run as a whole."""

    target: dict[str, Any]
    started: datetime
    finished: datetime
    options: dict[str, Any]
    timeouts: dict[str, Any]
    version: str = field(default_factory=suite_version)

    @property
    def label(self) -> str:
        return str(self.target.get("label") or self.target.get("kind") or "?")

    @classmethod
    def collect(cls, target: Target, runner: SuiteRunner, *, started: datetime | None, strict: bool,
                case_globs: Iterable[str], target_option: str | None) -> RunInfo:
        finished = utc_now()
        described = {
            "kind": target.kind,
            "label": target.label,
            "dialect": target.dialect.name,
            "url": target.base_url,
            "endpoint": getattr(target, "endpoint_name", None) or None,
            "region": getattr(target, "region", None) if target.kind == "sagemaker" else None,
            "endpoint_url": getattr(target, "endpoint_url", None),
            "image": target.image,
        }
        options = {
            "voice": runner.options.voice,
            "sample_rate": runner.options.sample_rate,
            "strict": strict,
            "cases": list(case_globs),
            "target": target_option,
        }
        return cls(described, started or finished, finished, options, runner.timeouts())

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": SUITE,
            "version": self.version,
            "format": FORMAT,
            "target": self.target,
            "started_at": iso_utc(self.started),
            "finished_at": iso_utc(self.finished),
            "duration_s": round((self.finished - self.started).total_seconds(), 3),
            "options": self.options,
            "timeouts": self.timeouts,
        }


def totals(entries: Iterable[Entry]) -> dict[str, Any]:
    """Cases per outcome and per verdict (every key present, zeros included)."""
    listed = list(entries)
    outcomes = Counter(e.outcome for e in listed)
    verdicts = Counter(e.verdict for e in listed)
    return {"cases": len(listed),
            "outcomes": {o: outcomes[o] for o in OUTCOMES},
            "verdicts": {v.value: verdicts[v.value] for v in Verdict}}


def report_json(entries: list[Entry], run: RunInfo | None = None, html_report: str | None = None) -> dict[str, Any]:
    head = run.to_json() if run is not None else {"suite": SUITE, "version": suite_version(), "format": FORMAT}
    return {**head, "totals": totals(entries), "html_report": html_report,
            "cases": [e.to_json() for e in entries]}


def write_json(path: Path, entries: Iterable[Entry], run: RunInfo | None = None,
               html_report: str | None = None) -> None:
    """The JSON report: run metadata around `cases`, one object per case, in case order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = report_json(list(entries), run, html_report)
    path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")


def page_name(case_id: str) -> str:
    """A case page's file name: the id, with anything unusual in a file name replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", case_id).lstrip(".") + ".html"


def pages_dir(html_path: Path) -> Path:
    """Where the case pages of the HTML report `html_path` go: `<stem>_cases/` beside it."""
    return html_path.with_name(f"{html_path.stem}_cases")


def summary_lines(entries: list[Entry]) -> list[str]:
    """A readable table (case, verdict, clauses, and the detail of every verdict but OK), each failure
    with its expected and actual under its row: the one place a failure is printed."""
    lines = []
    id_w = max([len(e.case.id) for e in entries] + [4])
    for e in entries:
        clauses = ",".join(e.case.clauses)
        note = "" if e.verdict == Verdict.OK else f"  {e.detail}"
        lines.append(f"{e.case.id:<{id_w}}  {e.verdict:<13}  {clauses}{note}")  # never cut the note
        if e.verdict == Verdict.FAILED:
            pad = " " * (id_w + 2)
            lines.append(f"{pad}expected: {e.expected or e.case.expectation}")
            lines.append(f"{pad}actual:   {e.actual or '-'}")
    counts = Counter(e.verdict for e in entries)
    lines.append("")
    lines.append("  ".join(f"{v}: {counts[v]}" for v in [*Verdict] if counts[v]))
    return lines


# -- reading reports back ------------------------------------------------------------------------
class ReportError(Exception):
    """A file that is not a readable conformance report; the message is one line."""


@dataclass(slots=True)
class LoadedReport:
    """A report read back: its metadata (empty for an old list-shaped report) and its entries."""

    path: Path
    meta: dict[str, Any]
    cases: list[dict[str, Any]]

    @property
    def label(self) -> str:
        target = self.meta.get("target")
        if isinstance(target, dict) and target.get("label"):
            return str(target["label"])
        return self.path.stem

    def case_page(self, case_id: str) -> Path | None:
        """The case page of `case_id` when the report names one and it exists."""
        for entry in self.cases:
            if entry.get("id") == case_id and isinstance(entry.get("case_page"), str):
                page = self.path.parent / entry["case_page"]
                return page if page.is_file() else None
        return None


def load_report(path: Path) -> LoadedReport:
    """Read a JSON report (the object of format 2, or the plain list of format 1)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReportError(f"{path}: is a folder, not a JSON report") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot read it ({type(exc).__name__})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}); expected a conformance report") from None
    meta: dict[str, Any] = {}
    if isinstance(data, dict):
        cases = data.get("cases")
        meta = {k: v for k, v in data.items() if k != "cases"}
    else:
        cases = data
    if not isinstance(cases, list) or not all(
            isinstance(e, dict) and isinstance(e.get("id"), str) and isinstance(e.get("verdict"), str) for e in cases):
        raise ReportError(f"{path}: not a conformance report (expected a 'cases' list of entries with 'id' and "
                          "'verdict')")
    return LoadedReport(path, meta, cases)
