"""`bidi-tts-conformance --compare A.json B.json ... [--output OUT.html]`: several containers side by side.

Autobahn|Testsuite's matrix: one row per case id, one column per report (labelled by its target),
each cell coloured by the verdict and linked to the report's case page when it has one, and the
totals per column. Reads the JSON reports the suite writes (the object with metadata, or the older
plain list). Bad input (no file given, a missing file, a file that is not a report, an unknown
option) is one line on stderr and exit status 4, the suite's usage-error status.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bidi_tts_conformance.model import Verdict
from bidi_tts_conformance.report import OUTCOMES, LoadedReport, ReportError, iso_utc, load_report, utc_now
from bidi_tts_conformance.report_html import esc, page, totals_badges, verdict_cell

DEFAULT_OUTPUT = "reports/conformance-compare.html"
USAGE = "usage: bidi-tts-conformance --compare A.json B.json ... [--output OUT.html]"
USAGE_ERROR = 4


class UsageError(Exception):
    """Bad arguments; the message is one line."""


def parse_args(argv: Sequence[str]) -> tuple[list[Path], Path]:
    files: list[Path] = []
    output = Path(DEFAULT_OUTPUT)
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("--output", "-o"):
            if not args:
                raise UsageError(f"{arg} needs a file name ({USAGE})")
            output = Path(args.pop(0))
        elif arg.startswith("--output="):
            output = Path(arg.split("=", 1)[1])
        elif arg == "--":
            files.extend(Path(a) for a in args)
            break
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option {arg} ({USAGE})")
        else:
            files.append(Path(arg))
    if not files:
        raise UsageError(f"give the JSON reports to compare ({USAGE})")
    return files, output


def _column_totals(report: LoadedReport) -> dict[str, object]:
    verdicts = Counter(str(e.get("verdict")) for e in report.cases)
    outcomes = Counter(str(e.get("outcome")) for e in report.cases)
    return {"cases": len(report.cases), "outcomes": {o: outcomes[o] for o in OUTCOMES},
            "verdicts": {v.value: verdicts[v.value] for v in Verdict}}


def _href(target: Path, output: Path) -> str:
    return Path(os.path.relpath(target.resolve(), output.parent.resolve())).as_posix()


def render(reports: list[LoadedReport], output: Path) -> str:
    """The matrix page, with links relative to where it will be written."""
    ids: list[str] = []
    clauses: dict[str, list[str]] = {}
    for report in reports:
        for entry in report.cases:
            if entry["id"] not in clauses:
                ids.append(entry["id"])
                listed = entry.get("clauses")
                clauses[entry["id"]] = [str(c) for c in listed] if isinstance(listed, list) else []
    by_report = [{e["id"]: e for e in r.cases} for r in reports]

    head = ["<th>case</th><th>clauses</th>"]
    for report in reports:
        label = esc(report.label)
        html_report = report.meta.get("html_report")
        if isinstance(html_report, str) and (report.path.parent / html_report).is_file():
            label = f"<a href='{esc(_href(report.path.parent / html_report, output))}'>{label}</a>"
        when = report.meta.get("started_at")
        head.append(f"<th>{label}<br><span class=small>{esc(report.path.name)}"
                    f"{' · ' + esc(when) if when else ''}</span></th>")
    rows = []
    for case_id in ids:
        cells = [f"<td><code>{esc(case_id)}</code></td><td>{esc(', '.join(clauses[case_id]))}</td>"]
        for report, entries in zip(reports, by_report, strict=True):
            found = entries.get(case_id)
            if found is None:
                cells.append("<td class=small>not run</td>")
                continue
            verdict = str(found["verdict"])
            shown = esc(verdict)
            if found.get("outcome") == "failed" and verdict != "FAILED":
                shown += " <span class=small>(failed)</span>"
            case_page = report.case_page(case_id)
            if case_page is not None:
                shown = f"<a href='{esc(_href(case_page, output))}'>{shown}</a>"
            cells.append(verdict_cell(verdict, shown, str(found.get("detail") or "")))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    foot = ["<td colspan=2><b>totals</b></td>"]
    foot.extend(f"<td>{totals_badges(_column_totals(r))}</td>" for r in reports)
    first = max(12, 30 - 3 * len(reports))
    colgroup = (f"<colgroup><col style='width:{first}%'><col style='width:12%'>"
                + "".join(f"<col style='width:{(88 - first) / len(reports):.2f}%'>" for _ in reports) + "</colgroup>")
    body = (f"<h1>Conformance matrix</h1><p class=meta>{len(reports)} reports, {len(ids)} cases · made "
            f"{esc(iso_utc(utc_now()))}; a cell links to the case's page (its frames) where the report has one.</p>"
            f"<table class=matrix>{colgroup}<tr>{''.join(head)}</tr>\n" + "\n".join(rows)
            + f"\n<tr>{''.join(foot)}</tr></table>")
    return page("Conformance matrix", body)


def main(argv: Sequence[str]) -> int:
    if list(argv[:1]) in (["--help"], ["-h"]):
        print(USAGE)
        print(__doc__.split("\n\n")[1])
        return 0
    try:
        files, output = parse_args(argv)
        reports = [load_report(path) for path in files]
    except (UsageError, ReportError) as exc:
        print(f"bidi-tts-conformance --compare: {exc}", file=sys.stderr)
        return USAGE_ERROR
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(render(reports, output), encoding="utf-8")
    except OSError as exc:
        print(f"bidi-tts-conformance --compare: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
        return USAGE_ERROR
    print(f"compared {len(reports)} reports: {output.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
