"""The reference container in vLLM-Omni's streaming speech dialect (reference_container.omni_session).

Most tests use the fake synthesizer (tests.container.helpers.FakeSynth: 0.1 s tone chunks); the last
one speaks through the REAL container (Kokoro int8 ONNX), short texts only.
"""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from bidi_tts.local_container import LocalContainer
from bidi_tts.protocol import INVOCATION_PATH_HEADER, WS_PATH
from bidi_tts_conformance.cases.frames import long_text
from tests.container.conftest import RunningContainer
from tests.container.helpers import FakeSynth, Received, read_until, serve_app
from tests.container.timed_server import READY_TIMEOUT_S

OMNI_PATH = "/v1/audio/speech/stream"
PCM_CONFIG = {"type": "session.config", "voice": "af_heart", "response_format": "pcm", "stream_audio": True,
              "split_granularity": "sentence"}
UNIT_BYTES = 2 * 2400 * 2  # FakeSynth: two chunks of 2400 samples per unit, s16le


def omni_connect(base_url: str, *, header_route: bool = False) -> ClientConnection:
    ws_base = base_url.replace("http://", "ws://")
    if header_route:
        return connect(ws_base + WS_PATH, max_size=None, open_timeout=10,
                       additional_headers={INVOCATION_PATH_HEADER: OMNI_PATH.lstrip("/")})
    return connect(ws_base + OMNI_PATH, max_size=None, open_timeout=10)


def send(ws: ClientConnection, obj: dict[str, Any], *, binary: bool = False) -> None:
    body = json.dumps(obj)
    ws.send(body.encode() if binary else body)


def flushes(n: int) -> Any:
    return lambda got: sum(1 for c in got.controls() if c["type"] == "session.done") >= n


def errors(n: int) -> Any:
    return lambda got: sum(1 for c in got.controls() if c["type"] == "error") >= n


def assert_sentences(got: Received, utterance: int, texts: list[str], *, unit_bytes: int | None) -> None:
    """audio.start, binary audio, audio.done per sentence in order, then one session.done."""
    frames = [(k, f) for k, f in got.frames if k == "binary" or f.get("utterance_index") == utterance]
    i = 0
    for index, text in enumerate(texts):
        kind, start = frames[i]
        assert kind == "text" and start == {"type": "audio.start", "utterance_index": utterance,
                                            "sentence_index": index, "sentence_text": text, "format": "pcm",
                                            "sample_rate": 24000, "channels": 1}, start
        i += 1
        audio = b""
        while frames[i][0] == "binary":
            audio += frames[i][1]
            i += 1
        assert audio and len(audio) % 2 == 0
        if unit_bytes is not None:
            assert len(audio) == unit_bytes
        done = frames[i][1]
        assert done == {"type": "audio.done", "utterance_index": utterance, "sentence_index": index,
                        "total_bytes": len(audio), "error": False}, done
        i += 1
    assert frames[i][1] == {"type": "session.done", "utterance_index": utterance, "total_sentences": len(texts)}


def test_sentences_stream_and_two_flushes_share_one_connection() -> None:
    synth = FakeSynth()
    with serve_app(synth) as srv, omni_connect(srv.url) as ws:
        send(ws, PCM_CONFIG)
        send(ws, {"type": "input.text", "text": "One. Tw"})
        send(ws, {"type": "input.text", "text": "o."})
        send(ws, {"type": "input.done"})
        first = read_until(ws, flushes(1), timeout=20)
        send(ws, {"type": "input.text", "text": "Three."})
        send(ws, {"type": "input.done"})
        second = read_until(ws, flushes(1), timeout=20)
        assert ws.close_code is None  # input.done is a flush: the connection stays open
    assert_sentences(first, 0, ["One.", "Two."], unit_bytes=UNIT_BYTES)
    assert_sentences(second, 1, ["Three."], unit_bytes=UNIT_BYTES)
    assert synth.calls == ["One.", "Two.", "Three."]  # through the container's scheduler and synthesizer


def test_first_sentence_is_spoken_before_the_flush() -> None:
    with serve_app(FakeSynth()) as srv, omni_connect(srv.url) as ws:
        send(ws, PCM_CONFIG)
        send(ws, {"type": "input.text", "text": "Hello there. And"})
        got = read_until(ws, lambda g: any(c["type"] == "audio.done" for c in g.controls()), timeout=20)
        assert got.controls()[0]["sentence_text"] == "Hello there."
        send(ws, {"type": "input.done"})
        rest = read_until(ws, flushes(1), timeout=20)
    assert rest.controls()[-1] == {"type": "session.done", "utterance_index": 0, "total_sentences": 2}


def test_binary_client_frames_are_served() -> None:
    with serve_app(FakeSynth()) as srv, omni_connect(srv.url) as ws:
        send(ws, PCM_CONFIG, binary=True)
        send(ws, {"type": "input.text", "text": "Binary."}, binary=True)
        send(ws, {"type": "input.done"}, binary=True)
        got = read_until(ws, flushes(1), timeout=20)
    assert_sentences(got, 0, ["Binary."], unit_bytes=UNIT_BYTES)


def test_granularity_none_is_one_unit_per_flush_and_wav_is_one_file() -> None:
    synth = FakeSynth()
    with serve_app(synth) as srv, omni_connect(srv.url) as ws:
        send(ws, {"type": "session.config", "split_granularity": "none"})  # defaults: wav, not streamed
        send(ws, {"type": "input.text", "text": "One. "})
        send(ws, {"type": "input.text", "text": "Two."})
        send(ws, {"type": "input.done"})
        got = read_until(ws, flushes(1), timeout=20)
    controls = got.controls()
    assert [c["type"] for c in controls] == ["audio.start", "audio.done", "session.done"]
    assert controls[0]["sentence_text"] == "One. Two." and controls[0]["format"] == "wav"
    (wav,) = [f for k, f in got.frames if k == "binary"]
    assert wav[:4] == b"RIFF" and wav[8:16] == b"WAVEfmt " and int.from_bytes(wav[24:28], "little") == 24000
    assert int.from_bytes(wav[40:44], "little") == len(wav) - 44 == controls[1]["total_bytes"]
    assert controls[2]["total_sentences"] == 1
    # the container plans its own units inside the one flush unit (both sentences, one audio.start)
    assert "".join(synth.calls).replace(" ", "") == "One.Two."


def test_errors_are_answered_and_the_session_stays_usable() -> None:
    with serve_app(FakeSynth(), max_text_chars=50) as srv, omni_connect(srv.url) as ws:
        send(ws, {"type": "input.text", "text": "Too early."})  # config required first
        ws.send("{not json")
        send(ws, {"type": "session.config", "voice": "zz_nobody"})
        send(ws, {"type": "session.config", "speed": 0})
        send(ws, {"type": "session.config", "speed": 9.5})
        send(ws, {"type": "session.config", "response_format": "mp3"})
        send(ws, {"type": "input.frobnicate"})
        got = read_until(ws, errors(7), timeout=20)
        send(ws, PCM_CONFIG)
        send(ws, {"type": "input.text", "text": "x" * 51})  # over --max-text-chars
        send(ws, {"type": "input.text", "text": "Half"})
        send(ws, {"type": "session.config", "voice": "am_adam"})  # during an utterance
        got2 = read_until(ws, errors(2), timeout=20)
        send(ws, {"type": "input.text", "text": " done."})
        send(ws, {"type": "input.done"})
        got3 = read_until(ws, flushes(1), timeout=20)
    codes = [c.get("code") for c in got.controls()]
    assert codes == ["config_required", "invalid_json", "unknown_voice", "bad_speed", "bad_speed",
                     "bad_format", "unknown_type"], got.controls()
    assert all(c["type"] == "error" and c["message"] for c in got.controls())
    assert got.controls()[0]["message"] == "Expected session.config, got: input.text"
    assert [c.get("code") for c in got2.controls()] == ["text_too_long", "config_in_utterance"]
    assert_sentences(got3, 0, ["Half done."], unit_bytes=UNIT_BYTES)


def test_session_close_finishes_then_closes_1000() -> None:
    with serve_app(FakeSynth(chunks=3, delay_s=0.05)) as srv, omni_connect(srv.url) as ws:
        send(ws, PCM_CONFIG)
        send(ws, {"type": "input.text", "text": "Last words."})
        send(ws, {"type": "input.done"})
        send(ws, {"type": "session.close"})
        got = read_until(ws, lambda g: False, timeout=20)
    assert got.close_code == 1000
    assert got.controls()[-1]["type"] == "session.done"


def test_idle_timeout_says_why_and_closes() -> None:
    with serve_app(FakeSynth(), omni_idle_timeout_s=0.5, omni_config_timeout_s=0.3) as srv:
        with omni_connect(srv.url) as ws:
            got = read_until(ws, lambda g: False, timeout=10)
        assert got.controls() == [{"type": "error", "code": "idle_timeout",
                                   "message": "Timeout waiting for session.config"}]
        assert got.close_code == 1000
        with omni_connect(srv.url) as ws:
            send(ws, PCM_CONFIG)
            started = time.monotonic()
            got = read_until(ws, lambda g: False, timeout=10)
            waited = time.monotonic() - started
        assert got.controls()[0]["message"] == "Idle timeout: no message received"
        assert 0.4 <= waited < 5


def test_client_disconnect_cancels_the_work() -> None:
    synth = FakeSynth(chunks=40, delay_s=0.05)  # 2 s of synthesis per unit
    with serve_app(synth) as srv:
        with omni_connect(srv.url) as ws:
            send(ws, PCM_CONFIG)
            send(ws, {"type": "input.text", "text": "A long sentence."})
            send(ws, {"type": "input.done"})
            read_until(ws, lambda g: bool(g.frames) and g.frames[-1][0] == "binary", timeout=20)
        time.sleep(0.5)
        made = synth.chunks_made
        time.sleep(0.6)
        assert synth.chunks_made - made <= 1, "synthesis went on after the client left"
        assert made < 40


def test_header_route_selects_the_dialect_and_the_default_stays_kokoro() -> None:
    with serve_app(FakeSynth()) as srv:
        with omni_connect(srv.url, header_route=True) as ws:
            send(ws, PCM_CONFIG)
            send(ws, {"type": "input.text", "text": "Routed."})
            send(ws, {"type": "input.done"})
            got = read_until(ws, flushes(1), timeout=20)
        assert_sentences(got, 0, ["Routed."], unit_bytes=UNIT_BYTES)
        with connect(srv.url.replace("http://", "ws://") + WS_PATH, max_size=None) as ws:
            ws.send(json.dumps({"text": "Kokoro.", "request_id": "k"}))
            kokoro = read_until(ws, lambda g: any(c["type"] == "synthesis_complete" for c in g.controls()))
        assert kokoro.controls()[0]["type"] == "synthesis_start"


@pytest.mark.timeout(60)
def test_sigterm_drain_finishes_the_unit_then_closes_1001() -> None:
    """A real container process (timed backend): the unit being spoken ends whole, nothing else starts."""
    proc = LocalContainer(args=["--backend", "timed", "--timed-profile", "h200-eager", "--log-level", "warning"])
    try:
        assert proc.wait_ready(READY_TIMEOUT_S, interval=0.1).ready, "the timed container did not start"
        with omni_connect(proc.url) as ws:
            send(ws, {**PCM_CONFIG, "split_granularity": "none"})
            send(ws, {"type": "input.text", "text": long_text(600)})
            send(ws, {"type": "input.done"})
            send(ws, {"type": "input.text", "text": "Never spoken."})
            send(ws, {"type": "input.done"})
            first = read_until(ws, lambda g: any(k == "binary" for k, _ in g.frames), timeout=20)
            assert proc.proc is not None
            proc.proc.send_signal(signal.SIGTERM)
            rest = read_until(ws, lambda g: False, timeout=30)
            reason = ws.close_reason
        assert proc.proc.wait(timeout=30) == 0
    finally:
        proc.stop(grace=5)
    controls = first.controls() + rest.controls()
    assert [c["type"] for c in controls] == ["audio.start", "audio.done"], controls
    audio = sum(len(f) for k, f in first.frames + rest.frames if k == "binary")
    assert controls[1]["error"] is False and controls[1]["total_bytes"] == audio
    assert (rest.close_code, reason) == (1001, "the container is shutting down")


@pytest.mark.slow
def test_real_kokoro_speaks_in_the_omni_dialect(real_container: RunningContainer) -> None:
    with omni_connect(real_container.url) as ws:
        send(ws, PCM_CONFIG, binary=True)
        send(ws, {"type": "input.text", "text": "Hello. Good day."}, binary=True)
        send(ws, {"type": "input.done"}, binary=True)
        got = read_until(ws, flushes(1), timeout=180)
    assert_sentences(got, 0, ["Hello.", "Good day."], unit_bytes=None)
    audio = b"".join(f for k, f in got.frames if k == "binary")
    assert len(audio) / 48000 > 0.6  # two short sentences of real speech at 24 kHz
