"""The reports of a real run: the JSON object, the HTML pages (checked in headless Chromium), the
frames on the case pages, and `bidi-tts-conformance --compare`.

One short run of the suite (`--case 'frames.*' --case audio.order.1`) against a toy that refuses the
sentence of audio.order.1 with an error whose message is one unbroken 525-character token: the kind
of detail that once stretched a report page five screens wide.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path

import pytest
from starlette.websockets import WebSocket

from bidi_tts import protocol
from bidi_tts.frames import FrameKind
from bidi_tts_conformance import compare
from bidi_tts_conformance.cases._util import SENTENCE
from bidi_tts_conformance.model import Case, CaseResult, Verdict
from bidi_tts_conformance.report import Entry, RunInfo, load_report, utc_now
from bidi_tts_conformance.report_html import WRAP_CSS, case_page
from bidi_tts_conformance.trace import FrameTrace
from tests.toys.good import ServerThread, ToyContainer

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "LONG" + "x" * 517 + "TOKN"  # 525 characters, no break opportunity
VIEWPORT = {"width": 1024, "height": 700}
assert len(TOKEN) == 525


class LongTokenToy(ToyContainer):
    """A good toy, except that it refuses the sentence audio.order.1 sends, with a 525-character message."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        if request.text == SENTENCE:
            await ws.send_text(protocol.error_frame(protocol.ErrorCode.INTERNAL, TOKEN, request.request_id))
            return
        await super().synthesize(ws, request)


@dataclass
class Run:
    json_path: Path
    html_path: Path
    proc: subprocess.CompletedProcess[str]

    @property
    def report(self) -> dict:
        return json.loads(self.json_path.read_text())


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    out = tmp_path_factory.mktemp("reports")
    json_path, html_path = out / "conformance.json", out / "conformance.html"
    with ServerThread(LongTokenToy().app()) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "conformance/test_cases.py", "-p", "no:cacheprovider",
             "--reply-timeout", "5", "--container-url", server.url, "--case", "frames.*",
             "--case", "audio.order.1", "--conformance-report", str(json_path),
             "--conformance-html", str(html_path)],
            cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, capture_output=True, text=True,
            timeout=180, check=False)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]  # audio.order.1 fails
    yield Run(json_path, html_path, proc)


# -- the JSON report ------------------------------------------------------------------------------
def _iso(value: str) -> datetime:
    assert value.endswith("Z"), value
    return datetime.fromisoformat(value)


@pytest.mark.timeout(240)
def test_json_report_is_an_object_with_metadata_around_the_pinned_cases(run: Run) -> None:
    report = run.report
    assert report["suite"] == "bidi-tts-conformance" and report["format"] == 2
    assert report["version"] == metadata.version("bidi-tts")
    target = report["target"]
    assert target["kind"] == "url" and target["url"].startswith("http://127.0.0.1:")
    assert target["url"] in target["label"] and target["endpoint"] is None
    started, finished = _iso(report["started_at"]), _iso(report["finished_at"])
    assert started <= finished and report["duration_s"] == pytest.approx((finished - started).total_seconds(),
                                                                          abs=0.002)
    assert report["options"] == {"voice": "af_heart", "sample_rate": 24000, "strict": False,
                                 "cases": ["frames.*", "audio.order.1"], "target": "auto"}
    timeouts = report["timeouts"]
    assert timeouts["silence_allowed_s"] == 5.0 and timeouts["silence_allowed_from"] == "--reply-timeout"
    assert timeouts["calibrated"] is False and timeouts["case_timeout_s"] == 300.0
    assert timeouts["calibration"]["probe_first_audio_ms"] > 0  # measured all the same
    assert report["html_report"] == "conformance.html"

    cases = report["cases"]
    ids = [e["id"] for e in cases]
    # in run order: frames.long.1 is one of selection.RUN_LAST's, after audio.order.1
    assert ids[-2:] == ["audio.order.1", "frames.long.1"] and all(i.startswith("frames.") for i in ids[:-2])
    assert len(ids) >= 10
    for e in cases:
        assert set(e) >= {"id", "clauses", "outcome", "verdict", "detail", "expected", "actual", "duration_s",
                          "notes", "frames", "case_page"}
        assert (run.json_path.parent / e["case_page"]).is_file()
        assert e["frames"]["sent"] >= 1 and e["frames"]["received"] >= 1
    totals = report["totals"]
    assert totals["cases"] == len(cases)
    assert totals["outcomes"] == {"passed": len(cases) - 1, "failed": 1, "skipped": 0}
    assert totals["verdicts"]["FAILED"] == 1 and totals["verdicts"]["OK"] == len(cases) - 1
    assert set(totals["verdicts"]) == {v.value for v in Verdict}
    failed = next(e for e in cases if e["id"] == "audio.order.1")
    assert failed["outcome"] == "failed" and failed["verdict"] == "FAILED"
    assert failed["expected"] and failed["actual"] == "error internal" and TOKEN in failed["detail"]


@pytest.mark.timeout(240)
def test_case_page_shows_the_frames_sent_and_received(run: Run) -> None:
    main = run.html_path.read_text()
    assert "conformance_cases/frames.binary.1.html" in main and "silence allowed" in main
    page = (run.html_path.parent / "conformance_cases" / "frames.binary.1.html").read_text()
    assert "href='../conformance.html'" in page
    assert "→ sent" in page and "← received" in page
    assert "synthesis_start" in page and "synthesis_complete" in page  # text frames, previewed
    assert "as text: {&quot;type&quot;: &quot;synthesize&quot;" in page  # the message sent in a BINARY frame
    assert "client close, code 1000" in page
    failed = (run.html_path.parent / "conformance_cases" / "audio.order.1.html").read_text()
    assert TOKEN in failed and "error internal" in failed


# -- the pages in headless Chromium ---------------------------------------------------------------
def _chromium() -> str:
    from bidi_tts_loadtest import browser_ttfa

    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); CI installs it")
    pytest.importorskip("playwright.sync_api")
    return browser_ttfa.find_chromium(None)


@pytest.mark.timeout(240)
def test_pages_never_scroll_sideways_in_chromium(run: Run, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from bidi_tts_loadtest.browser_ttfa import CHROMIUM_ARGS

    chromium = _chromium()
    # The matrix: this run beside an old list-shaped report of the same cases, verdicts changed.
    old = [{**e, "verdict": "NON-STRICT" if i % 3 else e["verdict"]} for i, e in enumerate(run.report["cases"])]
    old_path = run.json_path.parent / "old-list-report.json"
    old_path.write_text(json.dumps(old))
    matrix = run.json_path.parent / "matrix.html"
    assert compare.main([str(run.json_path), str(old_path), "--output", str(matrix)]) == 0
    # The same main page without the wrapping CSS: the check must see it overflow.
    unwrapped = run.html_path.with_name("unwrapped.html")
    unwrapped.write_text(run.html_path.read_text().replace(WRAP_CSS, ""))

    pages = {"main": run.html_path, "case": run.html_path.parent / "conformance_cases" / "audio.order.1.html",
             "compare": matrix, "unwrapped": unwrapped}
    widths: dict[str, tuple[int, int]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS, timeout=30_000)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            for name, path in pages.items():
                page.goto(path.as_uri())
                assert TOKEN[:40] in page.content() or name == "compare"
                widths[name] = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
            # A link of the matrix leads to the case page of the report that has them.
            page.goto(matrix.as_uri())
            page.click("a[href$='audio.order.1.html']")
            assert page.url.endswith("conformance_cases/audio.order.1.html")
        finally:
            browser.close()
    for name in ("main", "case", "compare"):
        scroll, viewport = widths[name]
        assert scroll <= viewport, f"{name} page is {scroll} px wide in a {viewport} px window"
    scroll, viewport = widths["unwrapped"]
    assert scroll > 2 * viewport, f"without the wrapping CSS the page should overflow: {scroll} px"
    for name in pages:
        assert (tmp_path / f"{name}.png").stat().st_size > 1000


# -- --compare ------------------------------------------------------------------------------------
@pytest.mark.timeout(240)
def test_compare_matrix_has_a_column_per_report_and_links(run: Run, tmp_path: Path) -> None:
    old = [{k: e[k] for k in ("id", "clauses", "outcome", "verdict", "detail")} for e in run.report["cases"]]
    old[0]["verdict"] = "FAILED"
    old_path = tmp_path / "reference.json"
    old_path.write_text(json.dumps(old))
    out = tmp_path / "deep" / "matrix.html"
    code = subprocess.run([sys.executable, "-m", "bidi_tts_conformance", "--compare", str(run.json_path),
                           str(old_path), "--output", str(out)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert code.returncode == 0, code.stderr
    assert str(out.resolve()) in code.stdout
    html = out.read_text()
    assert html.count("<tr>") == len(old) + 2  # header, one row per case, totals
    label = run.report["target"]["label"]
    assert f"<th><a href='{os.path.relpath(run.html_path, out.parent)}'>{label}</a>" in html
    assert "<th>reference<br>" in html  # the old list report is labelled by its file name
    rel = os.path.relpath(run.html_path.parent / "conformance_cases" / "frames.binary.1.html", out.parent)
    assert f"href='{rel}'" in html
    assert "class='v-FAILED'" in html and "class='v-OK'" in html
    # Each column's totals: audio.order.1 failed in both, the first case only in the second.
    for failures in (1, 2):
        assert f"<span class='badge v-FAILED'>FAILED {failures}</span>" in html


def _one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert compare.main(argv) == compare.USAGE_ERROR
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    assert lines[0].startswith("bidi-tts-conformance --compare: ")
    return lines[0]


def test_compare_bad_input_is_one_line_and_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "give the JSON reports" in _one_line_error([], capsys)
    assert "give the JSON reports" in _one_line_error(["--output", str(tmp_path / "o.html")], capsys)
    missing = tmp_path / "missing.json"
    assert f"{missing}: no such file" in _one_line_error([str(missing)], capsys)
    not_json = tmp_path / "junit.xml"
    not_json.write_text("<testsuites/>")
    assert "not JSON" in _one_line_error([str(not_json)], capsys)
    other = tmp_path / "summary.json"
    other.write_text(json.dumps({"sessions": 3, "ttfa_ms": {}}))  # a load-test summary
    assert "not a conformance report" in _one_line_error([str(other)], capsys)
    entries_without_ids = tmp_path / "list.json"
    entries_without_ids.write_text(json.dumps([1, 2, 3]))
    assert "not a conformance report" in _one_line_error([str(entries_without_ids)], capsys)
    assert "is a folder" in _one_line_error([str(tmp_path)], capsys)
    assert "unknown option --frobnicate" in _one_line_error(["--frobnicate", str(other)], capsys)
    assert "--output needs a file name" in _one_line_error([str(other), "--output"], capsys)
    assert not (tmp_path / "o.html").exists()


def test_compare_through_the_command_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bidi_tts_conformance", "--compare", str(tmp_path / "nope.json")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 4 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"bidi-tts-conformance --compare: {tmp_path / 'nope.json'}: no such file"]


def test_old_list_reports_are_still_read(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps([{"id": "frames.binary.1", "clauses": ["TTS-BINARY-IN"], "outcome": "passed",
                                 "verdict": "OK", "detail": ""}]))
    loaded = load_report(path)
    assert loaded.meta == {} and loaded.label == "old" and loaded.cases[0]["id"] == "frames.binary.1"
    assert loaded.case_page("frames.binary.1") is None


# -- the trace: bounded ---------------------------------------------------------------------------
def test_trace_keeps_a_bounded_number_of_short_rows() -> None:
    trace = FrameTrace(limit=20)
    trace.frame("s1", "sent", "x" * 10_000, FrameKind.TEXT)
    trace.frame("s1", "received", b"\x7b\x00" * 3000, FrameKind.BINARY)  # PCM that starts with '{'
    for _ in range(1000):
        trace.frame("s1", "received", b"\x01\x02" * 2400, FrameKind.BINARY)
    assert len(trace.events) == 20 and trace.not_recorded == 982
    assert trace.summary() == {"sent": 1, "received": 1001, "recorded": 20, "not_recorded": 982}
    text, pcm = trace.events[0], trace.events[1]
    assert text.size == 10_000 and len(text.preview) <= 302 and text.preview.endswith("…")
    assert pcm.preview == "7b 00 7b 00 7b 00 7b 00 7b 00 7b 00 7b 00 7b 00 …"  # hex only: not text

    async def check(_: object) -> None:
        return None

    case = Case("frames.binary.1", "one message", ("TTS-BINARY-IN",), "synthesis", check)
    result = CaseResult(case, Verdict.OK, "fine", trace=trace)
    now = utc_now()
    html = case_page(Entry.from_result(result, "passed"), RunInfo({"label": "toy"}, now, now, {}, {}), "../r.html")
    assert "… and 982 more not recorded (a case page keeps the first 20)" in html
    assert html.count("<tr><td>") == 20
