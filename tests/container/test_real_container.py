"""The REAL container (pinned start command, default backend: Kokoro int8 ONNX) against CONTRACT.md §1.

Short texts only: every message is real Kokoro synthesis on a shared CPU.
"""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
import pytest
from websockets.sync.client import connect

from bidi_tts.protocol import WS_PATH
from tests.container.conftest import MAX_MESSAGE_BYTES, MAX_TEXT_CHARS, RunningContainer
from tests.container.helpers import Received, completes, read_until, until_closed, ws_connect

pytestmark = pytest.mark.slow


def assert_speech(pcm: bytes, sample_rate: int, min_s: float) -> None:
    """Real speech: long enough, loud enough, and with the loudness changes of syllables."""
    assert len(pcm) % 2 == 0
    x = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    assert len(x) / sample_rate >= min_s
    frames = x[: len(x) // (sample_rate // 50) * (sample_rate // 50)].reshape(-1, sample_rate // 50)
    rms = np.sqrt((frames**2).mean(axis=1))
    assert rms.max() > 0.02, "audio is (almost) silent"
    assert (rms < rms.max() * 0.1).any() and (rms > rms.max() * 0.3).sum() > 5, "no speech-like envelope"


def one_message(got: Received, request_id: str) -> dict:
    done = [c for c in got.controls() if c.get("request_id") == request_id and c["type"] != "synthesis_start"]
    assert done, got.types()
    return done[-1]


def test_binary_and_text_frames_speak_alike(real_container: RunningContainer) -> None:
    with ws_connect(real_container.url) as ws:
        ws.send(json.dumps({"text": "Hello world.", "request_id": "bin"}).encode())  # BINARY, as SageMaker
        got_bin = read_until(ws, completes(1))
        ws.send(json.dumps({"text": "Hello world.", "request_id": "txt"}))  # TEXT; session stays open
        got_txt = read_until(ws, completes(1))
    for got, rid in ((got_bin, "bin"), (got_txt, "txt")):
        start, done = got.controls()[0], got.controls()[-1]
        assert start == {"type": "synthesis_start", "request_id": rid, "sample_rate": 24000,
                         "encoding": "pcm_s16le", "channels": 1}
        assert done["type"] == "synthesis_complete" and done["audio_bytes"] == len(got.audio())
        assert all(len(f) % 2 == 0 for k, f in got.frames if k == "binary")
        assert_speech(got.audio(), 24000, 0.5)
    # Deterministic model: the same message gives the same audio either way.
    assert got_bin.audio() == got_txt.audio()


def test_fragmented_message_and_sample_rates(real_container: RunningContainer) -> None:
    body = json.dumps({"text": "Good morning.", "sample_rate": 16000, "request_id": "frag"}).encode()
    with ws_connect(real_container.url) as ws:
        ws.send([body[:5], body[5:17], body[17:]])  # one message in three frames
        got = read_until(ws, completes(1))
        assert got.controls()[0]["sample_rate"] == 16000
        done = got.controls()[-1]
        assert done["duration_s"] == pytest.approx(len(got.audio()) / 32000, abs=1e-3)
        assert_speech(got.audio(), 16000, 0.4)
        for rate in (8000, 22050):
            ws.send(json.dumps({"text": "Yes.", "sample_rate": rate, "request_id": str(rate)}))
            got = read_until(ws, completes(1))
            assert got.controls()[0]["sample_rate"] == rate
            assert got.controls()[-1]["type"] == "synthesis_complete"


def test_streaming_first_audio_before_last_sentence(real_container: RunningContainer) -> None:
    text = ("The first sentence is short. The second sentence is a little longer than that. "
            "The third one closes the message.")
    with ws_connect(real_container.url) as ws:
        t0 = time.monotonic()
        ws.send(json.dumps({"text": text, "request_id": "s"}))
        got = read_until(ws, completes(1))
    kinds = got.types()
    first_audio = got.arrival[kinds.index("audio")] - t0
    total = got.arrival[-1] - t0
    assert first_audio < 0.6 * total, (first_audio, total)
    assert_speech(got.audio(), 24000, 4.0)


def test_bad_inputs_get_codes_and_session_stays_usable(real_container: RunningContainer) -> None:
    cases: list[tuple[bytes | str, str]] = [
        (b"\xc3\x28 not utf-8", "invalid_utf8"),
        ("{not json", "invalid_json"),
        ("[1, 2]", "not_an_object"),
        (json.dumps({"voice": "af_heart"}), "text_required"),
        (json.dumps({"text": "   "}), "text_required"),
        (json.dumps({"text": 5}), "text_required"),
        (json.dumps({"text": "x" * (MAX_TEXT_CHARS + 1)}), "text_too_long"),
        (json.dumps({"text": "a", "voice": "../../etc/passwd"}), "unknown_voice"),
        (json.dumps({"text": "a", "voice": "zz_nobody"}), "unknown_voice"),
        (json.dumps({"text": "a", "speed": 0}), "bad_speed"),
        (json.dumps({"text": "a", "speed": -1}), "bad_speed"),
        (json.dumps({"text": "a", "speed": 11}), "bad_speed"),
        (json.dumps({"text": "a", "sample_rate": 12345}), "bad_sample_rate"),
        (json.dumps({"text": "a", "sample_rate": "24000"}), "bad_sample_rate"),
        (json.dumps({"text": "a", "type": "dance"}), "unknown_type"),
    ]
    with ws_connect(real_container.url) as ws:
        for payload, code in cases:
            ws.send(payload)
            err = read_until(ws, completes(1), timeout=20).controls()[-1]
            assert err["type"] == "error" and err["code"] == code, (payload[:40], err)
            assert err["message"] and err["message"] not in ("'text'", "text")
        ws.send(json.dumps({"text": "Still here.", "request_id": "ok", "unknown_field": 1}))
        assert read_until(ws, completes(1)).controls()[-1]["type"] == "synthesis_complete"


def test_too_big_message_closes_1009(real_container: RunningContainer) -> None:
    with ws_connect(real_container.url) as ws:
        ws.send(json.dumps({"text": "y" * (MAX_MESSAGE_BYTES + 10)}))
        got = read_until(ws, until_closed, timeout=20)
    assert got.close_code == 1009
    assert httpx.get(real_container.url + "/ping", timeout=2).status_code == 200


def test_close_request_closes_1000_after_current_message(real_container: RunningContainer) -> None:
    with ws_connect(real_container.url) as ws:
        ws.send(json.dumps({"text": "Goodbye for now.", "request_id": "last"}))
        ws.send(json.dumps({"type": "close"}))
        got = read_until(ws, until_closed)
    assert one_message(got, "last")["type"] == "synthesis_complete"
    assert got.close_code == 1000


def test_cancel_mid_message(real_container: RunningContainer) -> None:
    text = " ".join(f"This is sentence number {i} of a long message." for i in range(1, 12))
    with ws_connect(real_container.url) as ws:
        ws.send(json.dumps({"text": text, "request_id": "long"}))
        read_until(ws, lambda g: "audio" in g.types())
        ws.send(json.dumps({"type": "cancel"}))
        got = read_until(ws, completes(1), timeout=120)
        done = got.controls()[-1]
        assert done["type"] == "synthesis_complete" and done["cancelled"] is True
        # 11 sentences are ~30 s of speech; cancelled after the first unit or two, far less was made.
        assert done["audio_bytes"] / 48000 < 10, done
        ws.send(json.dumps({"text": "Okay.", "request_id": "after"}))
        assert read_until(ws, completes(1)).controls()[-1]["request_id"] == "after"


def test_sessions_are_isolated_and_ping_stays_healthy(real_container: RunningContainer) -> None:
    with ws_connect(real_container.url) as bad, ws_connect(real_container.url) as good:
        good.send(json.dumps({"text": "I am the good session.", "request_id": "g"}))
        bad.send(b"\x00\x01garbage")
        bad.send(json.dumps({"text": "A long message that I will walk away from. " * 5}))
        ping_started = time.monotonic()
        assert httpx.get(real_container.url + "/ping", timeout=2).status_code == 200
        assert time.monotonic() - ping_started < 2
        bad.close()  # disconnect mid-message
        got = read_until(good, completes(1))
        assert got.controls()[-1]["type"] == "synthesis_complete"
        assert_speech(got.audio(), 24000, 1.0)
        assert good.ping().wait(5)  # pings answered


def test_invocation_path_header_is_harmless(real_container: RunningContainer) -> None:
    url = real_container.url.replace("http://", "ws://") + WS_PATH
    headers = {"X-Amzn-SageMaker-Model-Invocation-Path": "invocations-bidirectional-stream",
               "X-Amzn-SageMaker-Model-Query-String": "a=1"}
    with connect(url, additional_headers=headers, max_size=None) as ws:
        ws.send(json.dumps({"text": "Hi."}))
        assert read_until(ws, completes(1)).controls()[-1]["type"] == "synthesis_complete"


def test_post_invocations_real_audio(real_container: RunningContainer) -> None:
    r = httpx.post(real_container.url + "/invocations", json={"text": "Hello from the post route.",
                                                              "format": "wav"}, timeout=120)
    assert r.status_code == 200 and r.content[:4] == b"RIFF"
    assert_speech(r.content[44:], 24000, 1.0)
    bad = httpx.post(real_container.url + "/invocations", json={"text": "a", "speed": "fast"}, timeout=10)
    assert bad.status_code == 400 and bad.json()["code"] == "bad_speed"


def test_logs_carry_message_timings(real_container: RunningContainer) -> None:
    log = real_container.log()
    assert "event=ready backend=onnx" in log
    line = next(ln for ln in log.splitlines() if "event=message_done" in ln and "outcome=complete" in ln)
    for key in ("queue_wait_s=", "synth_s=", "first_audio_s=", "rtf=", "session="):
        assert key in line


def test_start_up_is_quiet_and_voices_are_listed(real_container: RunningContainer) -> None:
    """No warnings (FutureWarning from third-party code) and no traceback on a normal start."""
    log = real_container.log()
    assert "Warning" not in log and "Traceback" not in log, log[-3000:]
    r = httpx.get(real_container.url + "/voices", timeout=5)
    assert r.status_code == 200
    body = r.json()
    assert body["default"] == "af_heart" and "af_heart" in body["voices"] and body["voices"] == sorted(body["voices"])
