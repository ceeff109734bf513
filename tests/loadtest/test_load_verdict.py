"""The end of a load run as people read it: the verdict block, the settings in the summary, the tables
without a mixed Aggregated row, and the compare command over two or more summaries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bidi_tts.metrics import LatencyRecorder
from bidi_tts_loadtest.core.settings import run_settings
from bidi_tts_loadtest.run.compare import change
from bidi_tts_loadtest.run.compare import main as compare_main
from bidi_tts_loadtest.run.slo import Slo
from bidi_tts_loadtest.run.summary import COMPLETE, GAP, MESSAGE_OK, TTFA, build_summary
from bidi_tts_loadtest.run.verdict import BROKE, HELD, verdict_lines
from tests.loadtest.servers import ROOT, known_latency_server

OPTIONS = SimpleNamespace(num_users=4, spawn_rate=2.0, run_time=30, endpoint_name=None, voice="af_heart",
                          tokens_per_second=40.0, shape="none", master=False)


def summary_with(ttfa_ms: list[float], slo: Slo, errors: int = 0) -> dict:
    rec = LatencyRecorder()
    for i, v in enumerate(ttfa_ms):
        rec.add(TTFA, v, float(i))
        rec.add(COMPLETE, v * 2, float(i))
        rec.add(GAP, 10.0, float(i))
        rec.add(MESSAGE_OK, 0.0 if i < errors else 1.0, float(i))
    s = build_summary(rec, slo)
    s["settings"] = run_settings(OPTIONS, "http://127.0.0.1:8080", 1000.0, 1030.0)
    return s


def test_verdict_marks_each_threshold_held_or_broken_and_says_the_exit_code() -> None:
    s = summary_with([100.0] * 10 + [900.0] * 10, Slo(ttfa_p95_ms=300.0, error_rate=0.1))
    lines = verdict_lines(s, 1)
    text = "\n".join(lines)
    assert f"{BROKE} ttfa_p95_ms <= 300: 900.0" in text
    assert f"{HELD} error_rate <= 0.1: 0" in text
    assert lines[-1].startswith("  result      THRESHOLDS BROKEN") and lines[-1].endswith("(exit 1)")
    assert "http://127.0.0.1:8080" in text and "4 users" in text


def test_verdict_holds_when_every_threshold_holds_and_judges_nothing_without_one() -> None:
    held = verdict_lines(summary_with([100.0] * 20, Slo(ttfa_p95_ms=300.0)), 0)
    assert f"{HELD} ttfa_p95_ms <= 300: 100.0" in "\n".join(held) and BROKE not in "\n".join(held)
    assert held[-1] == "  result      every threshold held (exit 0)"
    none = verdict_lines(summary_with([100.0] * 20, Slo()), 0)
    assert "thresholds" not in "\n".join(none) and none[-1].startswith("  result      no --slo-* threshold set")


def test_a_run_broken_by_what_no_limit_names_still_lists_why() -> None:
    s = summary_with([], Slo(ttfa_p95_ms=300.0))  # nothing measured at all
    text = "\n".join(verdict_lines(s, 1))
    assert f"{BROKE} ttfa_p95_ms <= 300: nothing measured" in text and "THRESHOLDS BROKEN" in text


def test_settings_record_target_load_times_and_versions() -> None:
    settings = run_settings(OPTIONS, "http://127.0.0.1:8080", 1000.0, 1030.5)
    assert settings["host"] == "http://127.0.0.1:8080" and settings["users"] == 4 and settings["spawn_rate"] == 2.0
    assert settings["run_time_s"] == 30 and settings["voice"] == "af_heart" and settings["tokens_per_second"] == 40.0
    assert settings["started_at"] == "1970-01-01T00:16:40+00:00" and settings["duration_s"] == 30.5
    assert set(settings["versions"]) == {"bidi-tts", "locust", "python"} and settings["versions"]["bidi-tts"]
    endpoint = run_settings(SimpleNamespace(**{**vars(OPTIONS), "endpoint_name": "tts"}), None, None, None)
    assert endpoint["host"] is None and endpoint["endpoint_name"] == "tts" and endpoint["duration_s"] is None


# -- compare ---------------------------------------------------------------------------------------
def write(path: Path, summary: dict) -> Path:
    path.write_text(json.dumps(summary), encoding="utf-8")
    return path


def test_compare_puts_summaries_side_by_side_with_the_change_from_the_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.json", summary_with([100.0] * 20, Slo()))
    b = write(tmp_path / "b.json", summary_with([150.0] * 20, Slo()))
    c = write(tmp_path / "c.json", summary_with([50.0] * 20, Slo()))
    assert compare_main([str(a), str(b), str(c), "--json", str(tmp_path / "cmp.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["a.json", "b.json", "c.json"]
    row = next(line for line in out if line.startswith("TTFA p95 ms"))
    assert "100.0" in row and "150.0 (+50.0% worse)" in row and "50.0 (-50.0% better)" in row
    assert any(line.startswith("host (setting)") for line in out)
    data = json.loads((tmp_path / "cmp.json").read_text())
    assert data["labels"] == ["a.json", "b.json", "c.json"] and data["metrics"]["TTFA p95 ms"] == [100.0, 150.0, 50.0]


def test_compare_direction_follows_what_better_means() -> None:
    assert change(0.9, 0.8, lower_is_better=False) == " (-11.1% worse)"  # goodput down
    assert change(10, 10, lower_is_better=True) == ""
    assert change(0, 3, lower_is_better=True) == " (new)"


@pytest.mark.parametrize(("args", "says"), [
    (["only-one.json"], "give two or more summary files"),
    (["a.json", "missing.json"], "missing.json: no such file"),
    (["a.json", "notes.txt"], "not a JSON summary"),
    (["a.json", "other.json"], "not a load-test summary"),
    (["a.json", "a.json", "--bogus"], "unknown option --bogus"),
])
def test_compare_bad_input_is_one_line_and_exit_4(tmp_path: Path, args: list[str], says: str,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "a.json", summary_with([100.0], Slo()))
    write(tmp_path / "other.json", {"cases": []})
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    assert compare_main(args) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


# -- the command ----------------------------------------------------------------------------------
@pytest.mark.timeout(60)
def test_help_shows_the_project_s_options_with_their_defaults() -> None:
    done = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest", "--help"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for shown in ("simulated LLM token rate (default: 40.0)", "voice of every message (default: af_heart)",
                  "--slo-ttfa-p95-ms", "(default: none)"):
        assert shown in text, shown


@pytest.mark.timeout(60)
def test_a_bad_locust_option_is_a_usage_error_4() -> None:
    done = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest", "--headless", "--run-time", "2x"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 4 and "--run-time" in done.stderr.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_run_ends_with_the_verdict_records_its_settings_and_has_no_mixed_aggregate(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    with known_latency_server(120.0) as url:
        done = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest", "--headless", "-u", "2", "-r", "2",
                               "--run-time", "4s", "--host", url, "--summary-json", str(out),
                               "--tokens-per-second", "120", "--turn-pause-s", "0.1", "--slo-ttfa-p95-ms", "5000"],
                              capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    tail = done.stderr.rstrip().splitlines()
    block = tail[tail.index(next(line for line in tail if line.startswith("bidi-tts verdict"))):]
    assert block[-1] == "  result      every threshold held (exit 0)", block  # the last thing printed
    assert f"{HELD} ttfa_p95_ms <= 5000" in "\n".join(block)
    final_tables = done.stderr.split("Shutting down")[-1]
    assert "Aggregated" not in final_tables.replace("no Aggregated row", "") and "TTS      session" in final_tables
    summary = json.loads(out.read_text())
    settings = summary["settings"]
    assert settings["host"] == url and settings["users"] == 2 and settings["run_time_s"] == 4
    assert settings["tokens_per_second"] == 120.0 and settings["started_at"] < settings["ended_at"]
    for key in ("sessions", "messages", "errors", "underruns", "ttfa_ms", "complete_ms", "gap_ms"):
        assert key in summary  # CONTRACT's keys stay
