"""python -m bidi_tts_loadtest.plan: bad input is one line and exit 4; the JSON has the pinned keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bidi_tts_loadtest.ladder.result_file import LadderError, parse_ladder
from bidi_tts_loadtest.plan.cli import main
from bidi_tts_loadtest.plan.prices import UnknownPrice, price_for
from tests.loadtest.plan_helpers import HAND, POLICY, SAMPLE, SESSIONS, ladder_data, run, usage_error, write_ladder

ROOT = Path(__file__).resolve().parents[2]
PINNED = {"min_instances", "max_instances", "target_value", "scale_in_value", "scale_out_cooldown_s",
          "scale_in_cooldown_s", "cost_per_hour_peak", "cost_per_million_chars_peak", "findings"}
FOR_THE_SIMULATION = {"load", "slo_ms", "surge", "scale_out_s", "instance_type", "price_per_hour", "per_instance",
                      "queue_bound", "peak", "trough", "chars_per_request", "chars_per_session_s",
                      "cost_per_hour_trough", "cost_per_million_chars_trough", "source"}
PER_INSTANCE = {"q_max", "rps_at_q_max", "service_p95_ms", "service_mean_ms", "lambda_star", "lambda_target",
                "held_sessions", "curve"}


def _with(argv: list[str], option: str, value: str) -> list[str]:
    out = list(argv)
    out[out.index(option) + 1] = value
    return out


def test_the_json_has_the_pinned_keys_and_what_the_simulation_reads(tmp_path: Path) -> None:
    for argv in (SAMPLE, SESSIONS):
        _, plan = run(tmp_path, argv)
        assert PINNED | FOR_THE_SIMULATION <= plan.keys()
        assert PER_INSTANCE <= plan["per_instance"].keys()
        assert all(set(f) == {"level", "name", "detail"} for f in plan["findings"])
    assert plan["per_instance"]["curve"] is None  # H given by hand: no curve was measured
    _, plan = run(tmp_path, SAMPLE)
    assert plan["per_instance"]["curve"][0] == [1.0, 16.08, 60.0, 65.4]
    assert plan["source"]["price"] == "as quoted by the sample, on-demand us-east-1, retrieved 2026-12-02"


def _bad_ladders(tmp_path: Path) -> dict[str, str]:
    null_qmax = ladder_data()
    null_qmax["result"]["q_max"] = None
    no_rungs = ladder_data()
    no_rungs["rungs"] = []
    text_rps = ladder_data()
    text_rps["rungs"][0]["achieved_rps"] = "fast"
    (tmp_path / "broken.json").write_text("{not json")
    return {
        "null_qmax": write_ladder(tmp_path, null_qmax, "a.json"),
        "no_rungs": write_ladder(tmp_path, no_rungs, "b.json"),
        "text_rps": write_ladder(tmp_path, text_rps, "c.json"),
        "summary": write_ladder(tmp_path, {"sessions": 1, "ttfa_ms": {}}, "d.json"),
        "broken": str(tmp_path / "broken.json"),
        "missing": str(tmp_path / "nothing.json"),
    }


@pytest.mark.parametrize(("argv", "says"), [
    ([*HAND, "--peak-sessions", "10", "--trough-sessions", "1"], "not both"),
    ([*SESSIONS, "--peak-rps", "10"], "not both"),
    (_with(SAMPLE, "--trough-rps", "6000"), "below --trough-rps"),
    (_with(SESSIONS, "--trough-sessions", "3000"), "below --trough-sessions"),
    (_with(SAMPLE, "--surge", "0.9"), "--surge 0.9"),
    (_with(SAMPLE, "--surge", "2"), "--surge 2"),
    (_with(SAMPLE, "--instance-type", "ml.x9.huge"), "--price"),
    ([*SAMPLE[:-2], "--instance-type", "ml.g5.xlarge", "--region", "eu-west-1"], "--price"),
    ([*SAMPLE, "--qmax", "50"], "capacity once"),
    (["--peak-rps", "10", "--trough-rps", "1", *POLICY], "no capacity"),
    (["--ladder", str(ROOT / "tests/loadtest/data/ladder_g5_sample.json"), "--peak-sessions", "10",
      "--trough-sessions", "1", *POLICY], "request ladder plans request demand"),
    (_with(HAND, "--qmax", "-3"), "must be a number > 0"),
    (_with(SAMPLE, "--slo-ms", "soon"), "is not a number"),
    (_with(HAND, "--service-mean-ms", "80"), "above --service-p95-ms"),
    (SAMPLE[:-2], "--instance-type"),
])
def test_bad_input_is_one_line_and_exit_4(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert says in usage_error(argv, capsys)


@pytest.mark.parametrize(("which", "says"), [
    ("null_qmax", "Q_max is null"), ("no_rungs", "'rungs'"), ("text_rps", "achieved_rps is not a number"),
    ("summary", "not a ladder"), ("broken", "not JSON"), ("missing", "cannot read"),
])
def test_a_file_that_is_no_usable_ladder_is_exit_4(tmp_path: Path, which: str, says: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = _bad_ladders(tmp_path)[which]
    line = usage_error(["--ladder", path, *SAMPLE[2:]], capsys)
    assert says in line and path in line


def test_the_ladder_reader_takes_medians_skips_unusable_rungs_and_reads_open_loop_concurrency() -> None:
    data = ladder_data()
    data["rungs"].append({**data["rungs"][1], "run": 1, "achieved_rps": 17.0})
    data["rungs"].append({**data["rungs"][1], "run": 2, "achieved_rps": 17.5})
    data["rungs"].append({**data["rungs"][2], "run": 1, "achieved_rps": 1.0, "usable": False})
    ladder = parse_ladder(data)
    assert ladder.runs == 3
    assert [r.rps for r in ladder.rungs if r.level == 5] == [17.5]  # median of 17.9, 17.0, 17.5
    assert [r.rps for r in ladder.rungs if r.level == 10] == [17.92]
    data = ladder_data()
    data["loop"] = "open"
    data["rungs"][0]["concurrency_mean"] = 1.3  # an offered rate's rung: n is what was in system
    assert parse_ladder(data).rungs[0].level == 1.3
    with pytest.raises(LadderError, match="version"):
        parse_ladder({**ladder_data(), "version": 2})


def test_help_names_the_forms_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for needed in ("--ladder", "--held-sessions", "--qmax", "--rps-at-qmax", "--service-p95-ms", "--peak-rps",
                   "--peak-sessions", "--surge", "--min-floor", "--quota", "--price", "exit codes", "4 bad input"):
        assert needed in out, needed


def test_prices_name_their_source_and_yield_to_price() -> None:
    assert price_for("ml.g5.xlarge").usd_per_hour == 1.408
    assert price_for("ml.x9.huge", override=3.0).source == "given with --price"
    with pytest.raises(UnknownPrice, match="--price"):
        price_for("ml.g5.xlarge", region="eu-west-1")


def test_the_pinned_request_form_runs_without_characters_and_leaves_the_cost_per_character_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CONTRACT.md's request form names no --chars-per-request (issue 41: it exited 4)."""
    pinned = ["--qmax", "50", "--rps-at-qmax", "17.87", "--service-p95-ms", "66.1", "--peak-rps", "5000",
              "--trough-rps", "10", *POLICY]
    code, plan = run(tmp_path, pinned)
    assert code == 0
    assert plan["max_instances"] >= 1 and plan["target_value"] > 0 and plan["cost_per_hour_peak"] > 0
    assert plan["cost_per_million_chars_peak"] is None and plan["chars_per_request"] is None
    assert [f["level"] for f in plan["findings"] if f["name"] == "chars_per_request_unknown"] == ["WARN"]
    assert "not given: the cost per character is left out" in capsys.readouterr().out
    _, given = run(tmp_path, [*pinned, "--chars-per-request", "25.2"])
    assert given["max_instances"] == plan["max_instances"] and given["cost_per_million_chars_peak"] > 0


def test_the_command_runs_as_pinned(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    done = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest.plan", *SAMPLE, "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "max_instances    ceil(5000 / 13.52) = 370" in done.stdout
    assert json.loads(out.read_text())["max_instances"] == 370
    bad = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest.plan", *_with(SAMPLE, "--surge", "3")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 4 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_a_session_ladder_gives_h_and_the_characters_per_session_second(tmp_path: Path) -> None:
    data = ladder_data()
    data["load"] = "session"
    data["settings"]["slo_ms"] = 300
    for rung in data["rungs"]:
        rung["unit"] = "sessions"
    data["result"].update(q_max=20, chars_per_session_s=12.5)
    argv = ["--ladder", write_ladder(tmp_path, data), *SESSIONS[2:]]
    _, plan = run(tmp_path, argv)
    assert plan["per_instance"]["held_sessions"] == 20
    assert plan["target_value"] == pytest.approx(16.0)
    assert plan["chars_per_session_s"] == 12.5
    assert plan["source"]["capacity"] == "ladder"
