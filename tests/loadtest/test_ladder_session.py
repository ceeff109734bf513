"""The session ladder on a timed container: LLM-paced sessions held while p95 TTFA meets the SLO and none underruns.

The profile costs 50 ms a sentence and speaks 4 ms of audio per character, one sentence at a time
(fifo/1x1/whole): one session hears each sentence out long before the next is needed; eight sessions
queue eight sentences deep (~400 ms), longer than a sentence plays, so their turns underrun.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bidi_tts_loadtest.ladder.cli import main

PROFILE = {"name": "fixed-50ms-short-audio", "tokens_per_char": 1.0, "g2p_fixed_ms": 0.0, "g2p_per_char_ms": 0.0,
           "call_fixed_ms": 50.0, "call_per_token_ms": 0.0, "audio_s_per_token": 0.004}


@pytest.mark.slow
def test_a_closed_session_ladder_holds_one_session_and_not_eight(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(PROFILE))
    out = tmp_path / "ladder.json"
    code = main(["--timed-profile", str(profile), "--load", "session", "--levels", "1", "8", "--hold-s", "2.5",
                 "--measure-s", "2", "--drain-s", "1", "--idle-s", "0", "--slo-ms", "2000",
                 "--tokens-per-second", "400", "--pause-s", "0.1", "--json", str(out)])
    data = json.loads(out.read_text())
    one, eight = data["rungs"]
    assert (one["unit"], one["level"], eight["level"]) == ("sessions", 1, 8)
    assert one["usable"] and eight["usable"]
    assert one["meets_slo"] and one["underruns"] == 0 and one["ttfa_ms"]["p50"] >= 50
    assert eight["concurrency_mean"] == pytest.approx(8, rel=0.05)
    assert eight["underruns"] > 0 and not eight["meets_slo"]
    res = data["result"]
    assert (res["q_max"], res["bracketed"]) == (1, True) and code == 0
    assert res["chars_per_session_s"] > 0 and res["chars_per_request"] is None
    assert "underruns)" in capsys.readouterr().out


@pytest.mark.slow
def test_a_session_ladder_through_the_sagemaker_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--endpoint-name: the sessions go over InvokeEndpointWithBidirectionalStream to the local stand-in.

    The toy speaks 4 ms of audio a character (as the timed test above), so a turn is heard out in well
    under a second and several turns start inside the 2-s window; at the toy's default 20 ms a character a
    turn lasts ~3 s and a loaded machine can start none in the window (CI, stop 35).
    """
    from tests.sagemaker.helpers import start_gateway
    from tests.toys.good import ServerThread, ToyConfig, ToyContainer

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLETESTONLY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret-not-real")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    out = tmp_path / "ladder.json"
    with ServerThread(ToyContainer(ToyConfig(first_audio_delay_s=0.02, audio_s_per_char=0.004)).app()) as srv, \
            start_gateway(srv.url, tmp_path / "certs") as gw:
        gateway_url = gw.url
        code = main(["--endpoint-name", "toy", "--endpoint-url", gw.url, "--endpoint-ca", gw.ca_file,
                     "--load", "session", "--levels", "2", "--hold-s", "2.5", "--measure-s", "2", "--drain-s", "1",
                     "--idle-s", "0", "--tokens-per-second", "400", "--pause-s", "0.1", "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["target"]["kind"] == "endpoint" and data["target"]["endpoint_name"] == "toy"
    assert data["target"]["url"] == gateway_url and data["target"]["region"]
    (only,) = data["rungs"]
    assert only["usable"], only["unusable_reason"]
    assert only["completed"] > 0 and only["concurrency_mean"] == pytest.approx(2, rel=0.05)
    assert code == 0
