"""Regenerate the screenshots of docs/img that show the reports (issue 25): the load plots and the
conformance report's pages, from toy targets, in a few minutes on a laptop.

    uv run python scripts/docs_screenshots.py [--out docs/img] [--run-time 40s]

The load plots come from a 40-second `bidi-tts-load` run against the known-latency server with frames
sent a little slower than real time (so underruns show); the report pages from a suite run against the
toy container streaming at 1.05x real time, opened in headless Chromium (Debian's chromium).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bidi_tts_loadtest.core.exit_codes import Parser  # noqa: E402
from tests.loadtest.servers import known_latency_server  # noqa: E402
from tests.toys.good import ServerThread, ToyConfig, ToyContainer  # noqa: E402


def load_plots(out: Path, work: Path, run_time: str) -> None:
    with known_latency_server(150.0, "--frames", "6", "--frame-ms", "100", "--frame-interval-ms", "99") as url:
        subprocess.run([sys.executable, "-m", "bidi_tts_loadtest", "--headless", "-u", "12", "-r", "0.5",
                        "--run-time", run_time, "--host", url, "--tokens-per-second", "60", "--turn-pause-s", "0.3",
                        "--slo-ttfa-p95-ms", "250", "--summary-json", str(work / "load" / "summary.json"),
                        "--report-dir", str(work / "load")], cwd=ROOT, check=False, timeout=600)
    for name in ("over_time", "latency_cdf", "session_timeline"):
        shutil.copy(work / "load" / f"{name}.png", out / f"load-{name.replace('_', '-')}.png")


def report_pages(out: Path, work: Path) -> None:
    from playwright.sync_api import sync_playwright

    from bidi_tts_loadtest.relay.browser_ttfa import CHROMIUM_ARGS, find_chromium

    html = work / "report" / "conformance.html"
    with ServerThread(ToyContainer(ToyConfig(realtime_factor=1.05)).app()) as server:
        subprocess.run([sys.executable, "-m", "bidi_tts_conformance", "--container-url", server.url, "-q",
                        "--case", "frames.*", "--case", "audio.*", "--case", "session.*",
                        "--conformance-html", str(html), "--conformance-report", str(work / "report" / "r.json")],
                       cwd=work, check=False, timeout=600, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(None), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(html.as_uri() + "#q=audio")  # the filter as a link: cases matching "audio"
            page.click("table.cases th:text-is('time')")
            page.click("table.cases th:text-is('time')")  # slowest first
            page.screenshot(path=str(out / "report-filtered.png"), full_page=False)
            cases = sorted((html.parent / "conformance_cases").glob("frames.binary.1.html"))
            page.goto(cases[0].as_uri())
            page.screenshot(path=str(out / "report-case-audio.png"), full_page=False)
        finally:
            browser.close()


def main() -> int:
    parser = Parser(prog="scripts/docs_screenshots.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--run-time", default="40s")
    parser.add_argument("--skip-load", action="store_true", help="only the report pages")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from bidi_tts_loadtest.relay.browser_ttfa import find_chromium
    from bidi_tts_loadtest.relay.upstream import UsageError

    try:
        find_chromium(None)
    except UsageError as exc:
        print(f"docs_screenshots: {exc}", file=sys.stderr)
        return 4
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_load:
            load_plots(args.out, Path(tmp), args.run_time)
        report_pages(args.out, Path(tmp))
    print(f"screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
