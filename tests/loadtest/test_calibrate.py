"""loadtest.capacity calibrate: the fit's arithmetic, and a timed server of known cost recovered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bidi_tts_loadtest.calibrate import Observation, calibration_texts, fit, measure, plan_units
from reference_container.synthesizers.timed_profile import parse_profile
from tests.container.timed_server import REPO, timed_container


def test_fit_recovers_exact_costs() -> None:
    fixed, per_char, audio_per_char = 0.05, 0.002, 0.07
    obs = []
    for units in ([10], [30, 60], [40, 120, 80], [200], [15, 15]):
        obs.append(Observation(units, fixed + per_char * units[0], audio_per_char * sum(units)))
    result = fit(obs)
    assert result.fixed_s == pytest.approx(fixed) and result.per_char_s == pytest.approx(per_char)
    assert result.audio_s_per_char == pytest.approx(audio_per_char)
    assert result.latency_error == pytest.approx(0, abs=1e-9)
    profile = parse_profile(result.profile("x", "test", tokens_per_char=2.0), "x")
    assert profile.call_per_token_ms == pytest.approx(1.0) and profile.audio_s_per_token == pytest.approx(0.035)
    assert profile.audio_s_per_call == 0.0 and profile.audio_s(10, 1.0) == pytest.approx(0.35)


def test_fit_refuses_texts_that_do_not_spread() -> None:
    with pytest.raises(ValueError, match="spread"):
        fit([Observation([20], 0.1, 1.0)] * 3)


def test_calibration_texts_spread_and_plan_like_the_container() -> None:
    texts = calibration_texts()
    assert min(map(len, texts)) <= 25 and max(map(len, texts)) > 200 and len(texts) == 12
    assert max(len(plan_units(t)[0]) for t in texts) > 80  # first units spread for the latency fit
    assert plan_units("Short one. Then a second sentence here.") == ["Short one.", "Then a second sentence here."]
    assert len(plan_units(texts[9], 40)) == 2  # a long first sentence is cut at a clause/word
    assert len(plan_units(texts[9])) == 1 and len(plan_units(texts[11])) == 4


@pytest.mark.slow
def test_calibration_recovers_a_timed_server_of_known_cost(tmp_path: Path) -> None:
    known = {"name": "known", "tokens_per_char": 1.0, "g2p_fixed_ms": 0.0, "g2p_per_char_ms": 0.0,
             "call_fixed_ms": 40.0, "call_per_token_ms": 0.5, "audio_s_per_token": 0.06}
    path = tmp_path / "known.json"
    path.write_text(json.dumps(known))
    with timed_container(str(path), "--no-warmup", "--first-clause-chars", "0") as url:
        result = fit(measure(url, calibration_texts(), repeats=1))
    # Recovered within what one session's transfer and scheduling add (a few ms per unit).
    assert result.fixed_s * 1000 == pytest.approx(40.0, abs=8.0)
    assert result.per_char_s * 1000 == pytest.approx(0.5, rel=0.1)
    assert result.audio_s_per_char == pytest.approx(0.06, rel=0.03)


def test_calibrate_command_usage_errors_are_one_line(tmp_path: Path) -> None:
    bad_url = ["--container-url", "127.0.0.1:1", "--out", str(tmp_path / "p.json")]
    bad_out = ["--container-url", "http://127.0.0.1:1", "--out", "/nonexistent/p.json"]
    for args, expected in ((bad_url, "http://"), (bad_out, "does not exist")):
        result = subprocess.run([sys.executable, "-m", "loadtest.capacity", "calibrate", *args], cwd=REPO,
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 4 and expected in result.stderr and "Traceback" not in result.stderr
    result = subprocess.run([sys.executable, "-m", "loadtest.capacity", "calibrate", "--container-url",
                             "http://127.0.0.1:9", "--out", str(tmp_path / "p.json")], cwd=REPO,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 69 and len(result.stderr.strip().splitlines()) == 1
