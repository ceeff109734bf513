"""loadtest.relay without a browser: both shapes carry the container's exact PCM and the relay's timings."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from bidi_tts.sse import SSEDecoder, decode_audio_events
from bidi_tts.transports.sagemaker import SageMakerTarget
from bidi_tts_loadtest.relay.app import Relay
from bidi_tts_loadtest.relay.server import RelayServer, listen
from bidi_tts_loadtest.relay.upstream import Upstream, UsageError
from tests.toys.good import ServerThread, ToyConfig, ToyContainer, free_port, tone

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
DELAY_S = 0.15
TEXT = "Hello there."  # one sentence: the toy makes len * 0.02 s of tone after DELAY_S


@pytest.fixture(scope="module")
def toy() -> Iterator[ServerThread]:
    with ServerThread(ToyContainer(ToyConfig(first_audio_delay_s=DELAY_S)).app()) as server:
        yield server


@pytest.fixture(scope="module")
def relay(toy: ServerThread) -> Iterator[RelayServer]:
    with RelayServer(Relay(Upstream(container_url=toy.url)), listen("127.0.0.1", 0)) as server:
        yield server


def ws_turn(ws: Any, turn: dict[str, Any]) -> tuple[list[dict[str, Any]], bytes]:
    """Send one turn over the relay's /ws; the control messages and the PCM that came back."""
    ws.send(json.dumps(turn))
    controls: list[dict[str, Any]] = []
    pcm = bytearray()
    while True:
        message = ws.recv(timeout=20)
        if isinstance(message, bytes):
            pcm += message
            continue
        controls.append(json.loads(message))
        if controls[-1]["type"] in ("done", "error"):
            return controls, bytes(pcm)


def sse_turn(base: str, body: dict[str, Any]) -> tuple[int, list[Any]]:
    decoder = SSEDecoder()
    events = []
    with httpx.stream("POST", base + "/sse", json=body, timeout=20) as response:
        if response.status_code != 200:
            return response.status_code, [json.loads(response.read())]
        for chunk in response.iter_bytes():
            events += decoder.feed(chunk)
    return 200, events


def expected_pcm(text: str) -> bytes:
    return tone(len(text) * 0.02, 24000)


def test_ws_shape_forwards_the_exact_pcm_in_binary_frames_with_the_relays_timings(relay: RelayServer) -> None:
    with connect(relay.url.replace("http", "ws") + "/ws", max_size=None) as ws:
        controls, pcm = ws_turn(ws, {"text": TEXT})
        assert [c["type"] for c in controls] == ["start", "done"]
        assert controls[0]["sample_rate"] == 24000
        assert pcm == expected_pcm(TEXT)
        timing = controls[1]["relay"]
        assert timing["messages"] == 1 and timing["audio_bytes"] == len(pcm)
        assert DELAY_S * 1000 <= timing["container_first_byte"] < DELAY_S * 1000 + 500
        assert timing["upstream_connect"] == 0  # the session was opened with the page's WebSocket
        assert timing["llm_wait"] is None
        assert timing["relay_first_byte"] >= timing["container_first_byte"]
        # an upstream error comes back as an error message and the session stays usable
        controls, pcm = ws_turn(ws, {"text": TEXT, "voice": "zz_nobody"})
        assert controls[-1]["type"] == "error" and controls[-1]["code"] == "unknown_voice" and pcm == b""
        controls, _ = ws_turn(ws, {"text": "  "})
        assert controls[-1] == {"type": "error", "code": "bad_turn", "message": "text is required", "relay": None}
        controls, pcm = ws_turn(ws, {"text": TEXT})
        assert controls[-1]["type"] == "done" and pcm == expected_pcm(TEXT)


def test_sse_shape_carries_the_same_pcm_as_base64_events_and_reuses_the_session(relay: RelayServer) -> None:
    status, events = sse_turn(relay.url, {"text": TEXT, "session": "s1"})
    assert status == 200
    assert [e.event for e in events if e.event != "audio"] == ["start", "done"]
    assert decode_audio_events(events) == expected_pcm(TEXT)
    first = json.loads(events[-1].data)["relay"]
    status, events = sse_turn(relay.url, {"text": TEXT, "session": "s1"})
    second = json.loads(events[-1].data)["relay"]
    assert first["upstream_connect"] > 0, "the first turn of a session opens it"
    assert second["upstream_connect"] == 0, "the next turn of the same session reuses it"
    assert DELAY_S * 1000 <= second["container_first_byte"] < DELAY_S * 1000 + 500
    status, events = sse_turn(relay.url, {"text": TEXT, "voice": "zz_nobody", "session": "s1"})
    assert events[-1].event == "error" and json.loads(events[-1].data)["code"] == "unknown_voice"
    assert sse_turn(relay.url, {"text": ""})[0] == 400
    httpx.post(relay.url + "/sse/close", json={"session": "s1"}, timeout=5)


def test_a_page_that_leaves_mid_turn_does_not_leak_that_turn_into_the_next() -> None:
    slow = ToyConfig(realtime_factor=1.0)  # audio leaves at the pace it plays: 2 s for this text
    long_text = "A" * 100 + "."
    with ServerThread(ToyContainer(slow).app()) as toy, \
            RelayServer(Relay(Upstream(container_url=toy.url)), listen("127.0.0.1", 0)) as server:
        with httpx.stream("POST", server.url + "/sse", json={"text": long_text, "session": "s"}, timeout=20) as r:
            decoder = SSEDecoder()
            for chunk in r.iter_bytes():
                if any(e.event == "audio" for e in decoder.feed(chunk)):
                    break  # leave after the first audio, with most of the message still to come
        status, events = sse_turn(server.url, {"text": TEXT, "session": "s"})
        assert status == 200 and events[-1].event == "done"
        assert decode_audio_events(events) == expected_pcm(TEXT)


def test_a_simulated_llm_stream_goes_out_sentence_by_sentence(relay: RelayServer) -> None:
    text = "One two three four. Five six."  # 6 tokens at 20/s: the first sentence leaves after token 4
    status, events = sse_turn(relay.url, {"text": text, "tokens_per_second": 20})
    timing = json.loads(events[-1].data)["relay"]
    assert status == 200 and timing["messages"] == 2
    assert 150 - 20 <= timing["llm_wait"] < 150 + 250  # token 3 (0-based) is due at 0.15 s
    assert decode_audio_events(events) == expected_pcm("One two three four.") + expected_pcm("Five six.")


def test_the_page_and_its_scripts_are_served(relay: RelayServer) -> None:
    page = httpx.get(relay.url + "/", timeout=5)
    assert page.status_code == 200 and "listen.js" in page.text
    for name in ("listen.js", "player-worklet.js"):
        assert httpx.get(f"{relay.url}/static/{name}", timeout=5).status_code == 200
    assert "invocations-bidirectional-stream" in httpx.get(relay.url + "/config", timeout=5).json()["upstream"]


def test_relay_through_the_sagemaker_transport(toy: ServerThread, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.sagemaker.helpers import start_gateway

    # dummy credentials through the standard chain, as tests/sagemaker does; no real AWS is reached
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLETESTONLY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret-not-real")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with start_gateway(toy.url, tmp_path / "certs") as gw:
        target = SageMakerTarget("toy-endpoint", endpoint_url=gw.url, ca_file=gw.ca_file)
        with RelayServer(Relay(Upstream(target=target)), listen("127.0.0.1", 0)) as server:
            status, events = sse_turn(server.url, {"text": TEXT})
            assert status == 200 and decode_audio_events(events) == expected_pcm(TEXT)
            with connect(server.url.replace("http", "ws") + "/ws", max_size=None) as ws:
                controls, pcm = ws_turn(ws, {"text": TEXT})
            assert controls[-1]["type"] == "done" and pcm == expected_pcm(TEXT)


def test_bad_container_url_is_refused() -> None:
    with pytest.raises(UsageError, match="needs a scheme"):
        Upstream(container_url="127.0.0.1:8080")


# -- the command line: one line, non-zero, in seconds -------------------------------------------------
def run_relay(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest.relay", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=30)
    return done, time.monotonic() - began


@pytest.mark.parametrize(("args", "says", "code"), [
    (["--container-url", "127.0.0.1:8080"], "needs a scheme and a host", 4),
    (["--container-url", f"http://127.0.0.1:{free_port()}"], "cannot reach the upstream", 69),
])
def test_relay_cli_bad_usage_fails_with_one_line(args: list[str], says: str, code: int) -> None:
    done, took = run_relay(*args, "--port", "0")
    assert done.returncode == code  # docs/exit-codes.md
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and says in done.stderr
    assert took < 15


def test_relay_cli_busy_port_fails_with_one_line(toy: ServerThread) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done, took = run_relay("--container-url", toy.url, "--port", str(port))
    assert done.returncode == 4 and took < 15
    assert done.stderr.strip() == f"relay: cannot listen on 127.0.0.1:{port}: the port is in use"
