"""The load test in the vllm-omni dialect: a turn, the Locust users and the session ladder against the
vLLM-Omni toy (tests/toys/omni_good.py, a tone-speaking stand-in), and request load refused."""

from __future__ import annotations

import json
import subprocess
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path

import pytest

from bidi_tts.session import ClientSession
from bidi_tts_loadtest.core.target import open_sync_transport
from bidi_tts_loadtest.core.turn import TurnConfig, run_turn
from bidi_tts_loadtest.ladder.cli import main as ladder_main
from tests.loadtest.servers import ROOT, locust_cmd
from tests.toys.good import ServerThread, ToyConfig, ToyContainer
from tests.toys.omni_good import OmniToy

SHORT_AUDIO = ToyConfig(audio_s_per_char=0.004)  # a turn is heard out in well under a second


@pytest.fixture(scope="module")
def omni_toy() -> Iterator[tuple[OmniToy, str]]:
    toy = OmniToy(SHORT_AUDIO)
    with ServerThread(toy.app()) as server:
        yield toy, server.url


def test_a_turn_over_the_vllm_omni_dialect_completes_every_message(omni_toy: tuple[OmniToy, str]) -> None:
    toy, url = omni_toy
    heard_before = len(toy.frames_received)
    transport = open_sync_transport(Namespace(dialect="vllm-omni"), url)
    session = ClientSession()
    try:
        result = run_turn(transport, session, "The sun is out. The birds sing. We walk home.",
                          TurnConfig(tokens_per_second=400, message_timeout_s=5))
    finally:
        transport.close()
    assert result.failure is None, result.failure
    records = list(session.records.values())
    assert len(records) == 3 and all(r.completed_at is not None and r.audio_bytes > 0 for r in records)
    assert all(r.error_code is None for r in records)
    assert len(toy.frames_received) - heard_before >= 7  # config + 3 x (input.text, input.done) on its route


def test_the_default_dialect_cannot_open_the_vllm_omni_route(omni_toy: tuple[OmniToy, str]) -> None:
    from bidi_tts.transports.base import ConnectError

    with pytest.raises(ConnectError, match="invocations-bidirectional-stream"):
        open_sync_transport(Namespace(), omni_toy[1])  # kokoro-sample's route: the toy has none


def run_locust(url: str, tmp: Path, *extra: str) -> tuple[int, dict, str]:
    out = tmp / "summary.json"
    proc = subprocess.run(
        locust_cmd("--headless", "-u", "2", "-r", "2", "--run-time", "4s", "--host", url, "--summary-json", str(out),
                   "--tokens-per-second", "200", "--turn-pause-s", "0.1", "--only-summary", *extra),
        cwd=ROOT, capture_output=True, text=True, timeout=90)
    return proc.returncode, json.loads(out.read_text()) if out.exists() else {}, proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("dialect", ["kokoro-sample", "vllm-omni"])
def test_the_locust_users_run_in_both_dialects(dialect: str, tmp_path: Path) -> None:
    app = OmniToy(SHORT_AUDIO).app() if dialect == "vllm-omni" else ToyContainer(SHORT_AUDIO).app()
    with ServerThread(app) as server:
        code, summary, log = run_locust(server.url, tmp_path, "--dialect", dialect)
    assert code == 0, log
    assert summary["messages"] >= 3 and summary["errors"] == 0, summary
    assert summary["settings"]["dialect"] == dialect


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_session_ladder_in_the_vllm_omni_dialect(omni_toy: tuple[OmniToy, str], tmp_path: Path) -> None:
    out = tmp_path / "ladder.json"
    code = ladder_main(["--container-url", omni_toy[1], "--dialect", "vllm-omni", "--load", "session",
                        "--levels", "2", "--hold-s", "2.5", "--measure-s", "2", "--drain-s", "1", "--idle-s", "0",
                        "--tokens-per-second", "400", "--pause-s", "0.1", "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["target"]["dialect"] == "vllm-omni"
    (only,) = data["rungs"]
    assert only["usable"], only["unusable_reason"]
    assert only["completed"] > 0 and only["errors"] == 0
    assert code == 0


def test_request_load_in_the_vllm_omni_dialect_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        ladder_main(["--container-url", "http://127.0.0.1:9", "--dialect", "vllm-omni", "--load", "request",
                     "--levels", "1"])
    assert exit_info.value.code == 4
    err = capsys.readouterr().err
    assert "only the kokoro-sample dialect" in err and len(err.strip().splitlines()) == 1


def test_an_unknown_dialect_on_the_locust_run_exits_4(tmp_path: Path) -> None:
    proc = subprocess.run(locust_cmd("--headless", "--host", "http://127.0.0.1:9", "--dialect", "openai", "-u", "1",
                                     "--run-time", "1s"), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 4
    assert "--dialect: invalid choice: 'openai'" in proc.stderr
