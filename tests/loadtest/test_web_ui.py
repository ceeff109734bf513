"""The project's options in ``python -m loadtest --help`` and the web UI, and the live bidi-tts tab."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from bidi_tts_loadtest.run.live import live_rows
from tests.loadtest.servers import ROOT, free_port, known_latency_server

pytestmark = pytest.mark.timeout(90)
PROJECT_OPTIONS = ("--endpoint-name", "--region", "--tokens-per-second", "--summary-json", "--slo-ttfa-p95-ms",
                   "--slo-error-rate", "--shape", "--wav-dumps")


def test_help_lists_the_project_options() -> None:
    out = subprocess.run([sys.executable, "-m", "loadtest", "--help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    for option in PROJECT_OPTIONS:
        assert option in out.stdout, option


def test_web_ui_offers_the_project_options() -> None:
    probe = ("import json, loadtest.run.plugin; from locust.argument_parser import ui_extra_args_dict; "
             "print(json.dumps(sorted(ui_extra_args_dict(['-f', 'loadtest/locustfile.py']))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    shown = json.loads(out.stdout.strip().splitlines()[-1])
    for option in PROJECT_OPTIONS:
        assert option[2:].replace("-", "_") in shown, option


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


def test_live_tab_shows_exact_ttfa_while_the_run_goes() -> None:
    port = free_port()
    with known_latency_server(80) as url:
        proc = subprocess.Popen(
            [sys.executable, "-m", "locust", "-f", "loadtest/locustfile.py", "--host", url, "--web-host",
             "127.0.0.1", "--web-port", str(port), "--autostart", "-u", "2", "-r", "2", "--run-time", "20s",
             "--autoquit", "0", "--tokens-per-second", "200", "--turn-pause-s", "0.1"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            rows: dict[str, str] = {}
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                time.sleep(1)
                try:
                    stats = _get(f"http://127.0.0.1:{port}/stats/requests")
                except OSError:
                    continue
                tab = [e for e in stats.get("extended_stats", []) if e["key"] == "bidi-tts"]
                rows = {r["metric"]: r["value"] for r in tab[0]["data"]} if tab else {}
                if rows.get("messages", "0") != "0":
                    break
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                html = page.read().decode()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    ttfa = rows["TTFA ms p50 / p90 / p95 / p99 / max"].split(" / ")
    assert 75 <= float(ttfa[0]) < 200, rows  # the injected 80 ms, live, before the run ends
    assert rows["underruns (stall ms)"].startswith("0")
    assert '"extended_tabs": [{"key": "bidi-tts", "title": "bidi-tts"}]' in html  # the tab on the page


def test_live_rows_name_failures_and_broken_slos() -> None:
    stats = {"p50": None, "p90": None, "p95": None, "p99": None, "max": None}
    summary = {"sessions": 3, "sessions_completed": 0, "sessions_failed": 3, "sessions_cut": 0, "messages": 0,
               "errors": 3, "error_rate": 1.0, "ttfa_ms": stats, "turn_ttfa_ms": stats, "complete_ms": stats,
               "underruns": 0, "underrun_stall_ms": 0.0, "goodput": 0.0, "failures": {"credentials": 3},
               "slo_broken": ["no message was measured"]}
    rows = {r["metric"]: r["value"] for r in live_rows(summary)}
    assert rows["failed: credentials"] == "3"
    assert rows["SLO broken"] == "no message was measured"
    assert rows["sessions (completed / failed / cut)"] == "3 (0 / 3 / 0)"
