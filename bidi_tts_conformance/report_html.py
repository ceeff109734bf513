"""The HTML report: a page for the run (totals, date, target, timeouts, one row per case) and a page
per case with the frames sent and received, as Autobahn|Testsuite's case pages; and the pieces the
comparison matrix (compare.py) shares.

Pages are self-contained (inline CSS; the run's page has a small inline script to filter and sort its
cases, pytest-html's way, and a case page plays each session's audio from a data: URI) and never
scroll sideways: long details
(an unbroken 525-character token once stretched a page five screens wide) wrap anywhere, tables
have a fixed layout and the body a maximum width (:data:`WRAP_CSS`).
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from bidi_tts_conformance.clauses import clause_text
from bidi_tts_conformance.report import (
    SUITE,
    Entry,
    RunInfo,
    iso_utc,
    page_name,
    pages_dir,
    totals,
    utc_now,
    write_json,
)
from bidi_tts_conformance.report_assets import FILTER_CSS, FILTER_JS
from bidi_tts_conformance.report_audio import audio_section
from bidi_tts_conformance.trace import RECEIVED, SENT, TraceEvent

VERDICT_COLORS = {"OK": "#c8f0c8", "NON-STRICT": "#fff2a8", "FAILED": "#f8c0c0", "INFORMATIONAL": "#cfe6ff",
                  "NOT-JUDGED": "#e8d8f4", "SKIPPED": "#e6e6e6"}

# What keeps every page within the window: without it a long token stretches the page sideways
# (tests/conformance_suite/test_report_pages.py renders pages without it to show that).
WRAP_CSS = (
    "body{max-width:96rem;overflow-wrap:anywhere;word-break:break-word}"
    "table{table-layout:fixed;width:100%}"
    "td,th,code,a,p,li,h1,h2{overflow-wrap:anywhere;word-break:break-word}"
    "code{white-space:pre-wrap}"
)
BASE_CSS = (
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1rem auto;padding:0 1rem;"
    "color:#111}"
    "h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}"
    "table{border-collapse:collapse;margin:.4rem 0}"
    "td,th{padding:3px 6px;vertical-align:top;text-align:left;border-bottom:1px solid #ddd}"
    "th{background:#f4f4f4}"
    "table.kv th{width:11rem;background:none;font-weight:600}"
    "code{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace}"
    ".meta{color:#555}.small{font-size:12px;color:#555}"
    ".badge{display:inline-block;padding:2px 8px;margin:2px 4px 2px 0;border-radius:3px}"
    ".sent{color:#0b4f9c}.received{color:#7a3b00}"
    "a{color:#0645ad}"
    + "".join(f".v-{v}{{background:{c}}}" for v, c in VERDICT_COLORS.items())
)


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def page(title: str, body: str, *, wrap: bool = True, script: str = "") -> str:
    """A whole page; `wrap=False` leaves out WRAP_CSS (only the tests want that)."""
    css = BASE_CSS + FILTER_CSS + (WRAP_CSS if wrap else "")
    tail = f"<script>{script}</script>\n" if script else ""
    return (f"<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>{esc(title)}</title><style>{css}</style></head>\n<body>\n{body}\n{tail}</body></html>\n")


def clause_links(clauses: list[str] | tuple[str, ...], href: str = "") -> str:
    """Each clause id linked to its text in the run page's clause list (`href`: that page, from here)."""
    return ", ".join(f"<a href='{esc(href)}#clause-{esc(c)}' title='{esc(clause_text(c))}'>{esc(c)}</a>"
                     for c in clauses)


def clauses_list(clauses: list[str]) -> str:
    """The text of every clause the run's cases cite, each an anchor the tables link to."""
    items = "".join(f"<dt id='clause-{esc(c)}'>{esc(c)}</dt><dd>{esc(clause_text(c))}</dd>" for c in clauses)
    return f"<h2>Clauses</h2><dl class=clauses>{items}</dl>"


def filters(entries: list[Entry]) -> str:
    """A checkbox per verdict present (with its count) and a text box; the script does the rest."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.verdict] = counts.get(e.verdict, 0) + 1
    boxes = "".join(f"<label><input type=checkbox checked data-verdict='{esc(v)}'> "
                    f"<span class='badge v-{esc(v)}'>{esc(v)} {n}</span></label>" for v, n in counts.items())
    return (f"<div class=filters>{boxes}<label>filter<input type=search placeholder='case id, clause, detail'>"
            f"</label><span id=shown-count class=small></span></div>")


def verdict_cell(verdict: str, content: str, title: str = "") -> str:
    tip = f" title='{esc(title[:500])}'" if title else ""
    return f"<td class='v-{esc(verdict)}'{tip}>{content}</td>"


def totals_badges(counts: dict[str, Any]) -> str:
    verdicts = counts.get("verdicts", {})
    badges = "".join(f"<span class='badge v-{esc(v)}'>{esc(v)} {n}</span>" for v, n in verdicts.items() if n)
    outcomes = ", ".join(f"{n} {esc(o)}" for o, n in counts.get("outcomes", {}).items())
    return f"<p>{badges}<br><span class=small>{counts.get('cases', 0)} cases: {outcomes}</span></p>"


def _seconds(value: Any) -> str:
    return f"{value:g} s" if isinstance(value, int | float) else "-"


def _option(name: str, value: Any) -> str:
    if isinstance(value, list):
        return f"{name} {' '.join(map(str, value)) if value else '(all)'}"
    if isinstance(value, bool):
        return f"{name} {'yes' if value else 'no'}"
    return f"{name} {'-' if value is None else value}"


def run_table(meta: dict[str, Any]) -> str:
    """Target, options and timeouts of a report's metadata, as a two-column table."""
    target = meta.get("target") or {}
    where = [f"{k} {target[k]}" for k in ("url", "endpoint", "region", "endpoint_url", "image") if target.get(k)]
    options = meta.get("options") or {}
    shown_options = ", ".join(_option(k, v) for k, v in options.items())
    t = meta.get("timeouts") or {}
    calibration = (t.get("calibration") or {}).get("summary") or "not measured"
    rows = [
        ("target", f"{esc(target.get('kind', '?'))}: {esc(target.get('label', ''))}"
                   + (f"<br><span class=small>{esc('; '.join(where))}</span>" if where else "")),
        ("date", f"{esc(meta.get('started_at', '?'))} to {esc(meta.get('finished_at', '?'))} "
                 f"({_seconds(meta.get('duration_s'))})"),
        ("suite", f"{esc(meta.get('suite', SUITE))} {esc(meta.get('version', '?'))}"),
        ("options", esc(shown_options) or "-"),
        ("silence allowed", f"{_seconds(t.get('silence_allowed_s'))} ({esc(t.get('silence_allowed_from', '?'))})"),
        ("case timeout", f"{_seconds(t.get('case_timeout_s'))} ({esc(t.get('case_timeout_from', '?'))})"),
        ("calibration", esc(calibration)),
    ]
    return "<table class=kv>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def main_page(entries: list[Entry], run: RunInfo, cases_href: str | None, *, wrap: bool = True) -> str:
    meta = {**run.to_json(), "totals": totals(entries)}
    rows = []
    for e in entries:
        name = esc(e.case.id)
        link = f"<a href='{esc(cases_href)}/{esc(page_name(e.case.id))}'>{name}</a>" if cases_href else name
        shown_outcome = e.outcome not in ("passed", "skipped")
        outcome = f"<br><span class=small>{esc(e.outcome)}</span>" if shown_outcome else ""
        rows.append(
            f"<tr data-verdict='{esc(e.verdict)}'><td data-sort='{name}'><code>{link}</code><br>"
            f"<span class=small>{esc(e.case.description)}</span></td>"
            f"<td>{clause_links(e.case.clauses)}</td>"
            + verdict_cell(e.verdict, esc(e.verdict) + outcome)
            + f"<td>{esc(e.expected or e.case.expectation)}</td><td>{esc(e.actual or '-')}</td>"
            f"<td>{esc(e.detail) or '-'}</td><td data-sort='{e.duration_s:.6f}'>{e.duration_s:.2f} s</td></tr>")
    cited = sorted({c for e in entries for c in e.case.clauses})
    body = (
        f"<h1>Conformance of {esc(run.label)}</h1>"
        f"<p class=meta>{esc(iso_utc(run.started))} · {SUITE} {esc(run.version)}</p>"
        + totals_badges(meta["totals"]) + run_table(meta)
        + "<h2>Cases</h2>" + filters(entries)
        + "<table class=cases><colgroup><col style='width:17%'><col style='width:10%'>"
        "<col style='width:8%'><col style='width:17%'><col style='width:15%'><col style='width:27%'>"
        "<col style='width:6%'></colgroup>"
        "<tr><th class=sortable>case</th><th class=sortable>clauses</th><th class=sortable>verdict</th>"
        "<th class=sortable>expected</th><th class=sortable>actual</th><th class=sortable>detail</th>"
        "<th class=sortable data-type=number>time</th></tr>\n" + "\n".join(rows) + "\n</table>"
        + clauses_list(cited))
    return page(f"Conformance of {run.label}", body, wrap=wrap, script=FILTER_JS)


def _direction(event: TraceEvent) -> str:
    if event.direction == SENT:
        return "<span class=sent>→ sent</span>"
    if event.direction == RECEIVED:
        return "<span class=received>← received</span>"
    return "·"


def case_page(entry: Entry, run: RunInfo, back_href: str, *, wrap: bool = True) -> str:
    e = entry
    rows = [
        ("clauses", clause_links(e.case.clauses, back_href) + "".join(
            f"<br><span class=small>{esc(c)}: {esc(clause_text(c))}</span>" for c in e.case.clauses)),
        ("verdict", f"<span class='badge v-{esc(e.verdict)}'>{esc(e.verdict)}</span> (outcome {esc(e.outcome)})"),
        ("expectation", esc(e.case.expectation)),
        ("expected", esc(e.expected or e.case.expectation)),
        ("actual", esc(e.actual or "-")),
        ("detail", esc(e.detail) or "-"),
        ("duration", f"{e.duration_s:.3f} s"),
        ("target", esc(run.label)),
        ("run", f"{esc(iso_utc(run.started))} · {SUITE} {esc(run.version)}"),
    ]
    body = [f"<p><a href='{esc(back_href)}'>← all cases</a></p>",
            f"<h1>{esc(e.case.id)}</h1><p>{esc(e.case.description)}</p>",
            "<table class=kv>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"]
    if e.notes:
        body.append("<h2>Noted, judged by other cases</h2><ul>"
                    + "".join(f"<li>{esc(n)}</li>" for n in e.notes) + "</ul>")
    body.append(audio_section(e.trace.audio if e.trace is not None else None))
    body.append("<h2>Frames</h2>")
    trace = e.trace
    if trace is None or not trace.events:
        body.append("<p>No frame: the case opened no session and sent no HTTP request"
                    + (f" ({esc(e.detail)})" if e.verdict == "SKIPPED" else "") + ".</p>")
    else:
        body.append(f"<p class=small>{trace.sent} frames sent, {trace.received} received; time in ms since the "
                    f"case began; s1, s2...: the case's sessions, http: its HTTP requests. Text is shown up to "
                    f"300 characters, binary as its first 16 bytes in hex.</p>")
        frames = "\n".join(
            f"<tr><td>{i}</td><td>{ev.t_ms:.1f}</td><td>{esc(ev.session)}</td><td>{_direction(ev)}</td>"
            f"<td>{esc(ev.kind)}</td><td>{'' if ev.size is None else ev.size}</td>"
            f"<td><code>{esc(ev.preview)}</code></td></tr>"
            for i, ev in enumerate(trace.events, 1))
        body.append("<table class=frames><colgroup><col style='width:4%'><col style='width:7%'>"
                    "<col style='width:8%'><col style='width:9%'><col style='width:7%'><col style='width:6%'>"
                    "<col style='width:59%'></colgroup><tr><th>#</th><th>ms</th><th>session</th><th>direction</th>"
                    f"<th>kind</th><th>bytes</th><th>preview</th></tr>\n{frames}\n</table>")
        if trace.not_recorded:
            body.append(f"<p>… and {trace.not_recorded} more not recorded (a case page keeps the first "
                        f"{trace.limit}).</p>")
    return page(f"{e.case.id}: {e.verdict}", "\n".join(body), wrap=wrap)


def write_html(path: Path, entries: list[Entry], run: RunInfo | None = None, *, wrap: bool = True) -> None:
    """The run's page at `path` and one page per case in `<stem>_cases/` beside it."""
    if run is None:
        now = utc_now()
        run = RunInfo({"kind": "?", "label": "?"}, now, now, {}, {})
    folder = pages_dir(path)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.html"):  # pages of cases this run did not select
        stale.unlink()
    for e in entries:
        (folder / page_name(e.case.id)).write_text(case_page(e, run, f"../{path.name}", wrap=wrap), encoding="utf-8")
    path.write_text(main_page(entries, run, folder.name, wrap=wrap), encoding="utf-8")


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def write_reports(json_path: Path, html_path: Path | None, entries: list[Entry], run: RunInfo) -> None:
    """The JSON report and, when `html_path` is given, the HTML page and one page per case."""
    html_report = None
    if html_path is not None:
        folder = pages_dir(html_path)
        for e in entries:
            e.case_page = _relative(folder / page_name(e.case.id), json_path.parent)
        html_report = _relative(html_path, json_path.parent)
        write_html(html_path, entries, run)
    write_json(json_path, entries, run, html_report)
