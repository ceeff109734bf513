"""loadtest.bidi_vs_batch against the toy container: bidi reaches first audio sooner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bidi_tts_loadtest.studies.bidi_vs_batch import main
from tests.toys.good import ServerThread, ToyConfig, ToyContainer

pytestmark = pytest.mark.timeout(120)


def test_bidi_beats_batch_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bvb.json"
    with ServerThread(ToyContainer(ToyConfig(first_audio_delay_s=0.05)).app()) as srv:
        code = main(["--container-url", srv.url, "--tokens-per-second", "60", "--first-token-ms", "50",
                     "--trials", "2", "--json", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    for key in ("ttfa_bidi_ms", "ttfa_batch_ms", "ratio", "trials"):
        assert key in result
    assert len(result["trials"]) == 2
    # Batch waits for every token (~30 words at 60/s = ~0.5 s) before sending anything.
    assert result["ttfa_batch_ms"] > result["ttfa_bidi_ms"]
    assert result["ratio"] == pytest.approx(result["ttfa_batch_ms"] / result["ttfa_bidi_ms"])
    for row in result["trials"]:
        assert row["ttfa_batch_ms"] >= 50 + (row["answer_chars"] / 8) / 60 * 1000 * 0.5


def test_through_the_sagemaker_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.sagemaker.helpers import start_gateway

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLETESTONLY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret-not-real")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    out = tmp_path / "bvb.json"
    with ServerThread(ToyContainer(ToyConfig(first_audio_delay_s=0.02)).app()) as srv, \
            start_gateway(srv.url, tmp_path / "certs") as gw:
        code = main(["--endpoint-name", "toy", "--endpoint-url", gw.url, "--endpoint-ca", gw.ca_file,
                     "--tokens-per-second", "100", "--first-token-ms", "20", "--trials", "2", "--json", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    assert result["endpoint_name"] == "toy" and len(result["trials"]) == 2
    assert result["ttfa_batch_ms"] > result["ttfa_bidi_ms"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--container-url", "127.0.0.1:8080"], "write it with its scheme"),
    (["--container-url", "http://x:1", "--trials", "0"], "--trials: 0 must be a positive whole number"),
    (["--container-url", "http://x:1", "--tokens-per-second", "0"], "--tokens-per-second: 0 must be a positive"),
    (["--container-url", "http://x:1", "--first-token-ms", "-1"], "--first-token-ms: -1 must be zero or more"),
    ([], "give a container URL (--container-url http://HOST:PORT) or --endpoint-name"),
    (["--container-url", "http://x:1", "--endpoint-name", "e"], "not both"),
])
def test_bad_options_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 4  # docs/exit-codes.md: a usage error
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_nothing_listening_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from bidi_tts.local_container import free_port

    assert main(["--container-url", f"http://127.0.0.1:{free_port()}", "--trials", "1"]) == 69
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing listens at 127.0.0.1" in err[0] and "connection refused" in err[0]
