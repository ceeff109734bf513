"""The web layer with a fake synthesizer: ordering, busy, cancel, disconnect, errors, readiness."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import ClassVar

import httpx
import numpy as np

from tests.container.helpers import FakeSynth, completes, read_until, serve_app, until_closed, ws_connect


def test_ping_503_until_loaded_then_200() -> None:
    gate = threading.Event()

    class SlowLoad(FakeSynth):
        def load(self) -> None:
            gate.wait(10)

    with serve_app(SlowLoad()) as srv:
        assert httpx.get(srv.url + "/ping", timeout=2).status_code == 503
        gate.set()
        deadline = time.monotonic() + 10
        while httpx.get(srv.url + "/ping", timeout=2).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_messages_in_order_and_next_waits_for_complete() -> None:
    synth = FakeSynth(chunks=3, delay_s=0.02)
    with serve_app(synth) as srv, ws_connect(srv.url) as ws:
        ws.send(json.dumps({"text": "One. Two.", "request_id": "m1"}).encode())  # BINARY
        ws.send(b"\xff\xfe")  # invalid UTF-8 while m1 is synthesizing
        ws.send(json.dumps({"text": "Three.", "request_id": "m2"}))  # TEXT
        got = read_until(ws, completes(3))
    types = got.types()
    end1 = next(i for i, (kind, c) in enumerate(got.frames)
                if kind == "text" and c["type"] == "synthesis_complete")
    assert types[0] == "synthesis_start" and "audio" in types[1:end1]
    assert got.frames[end1 + 1][1]["code"] == "invalid_utf8"  # queued in order, not inside m1's audio
    start2 = got.frames[end1 + 2][1]
    assert (start2["type"], start2["request_id"]) == ("synthesis_start", "m2")
    completes_ = [c for c in got.controls() if c["type"] == "synthesis_complete"]
    assert completes_[0]["audio_bytes"] == len(got.audio("m1")) == 2 * 2400 * 3 * 2
    assert synth.calls == ["One.", "Two.", "Three."]


def test_busy_when_queue_full() -> None:
    synth = FakeSynth(chunks=20, delay_s=0.05)
    with serve_app(synth, max_queue=1) as srv, ws_connect(srv.url) as a, ws_connect(srv.url) as b:
        a.send(json.dumps({"text": "Long one.", "request_id": "a"}))
        time.sleep(0.3)
        b.send(json.dumps({"text": "Short.", "request_id": "b"}))
        got_b = read_until(b, completes(1), timeout=10)
        assert got_b.controls()[0]["code"] == "busy"
        assert got_b.controls()[0]["request_id"] == "b"
        got_a = read_until(a, completes(1), timeout=20)
        assert got_a.controls()[-1]["type"] == "synthesis_complete"
        # Once a is done, b is served.
        b.send(json.dumps({"text": "Short.", "request_id": "b2"}))
        assert read_until(b, completes(1), timeout=10).controls()[-1]["type"] == "synthesis_complete"


def test_cancel_stops_current_and_reports_cancelled() -> None:
    synth = FakeSynth(chunks=100, delay_s=0.02)
    with serve_app(synth) as srv, ws_connect(srv.url) as ws:
        ws.send(json.dumps({"text": "A long sentence. Another one. And more.", "request_id": "c"}))
        read_until(ws, lambda g: "audio" in g.types(), timeout=10)
        ws.send(json.dumps({"type": "cancel"}))
        got = read_until(ws, completes(1), timeout=10)
        done = got.controls()[-1]
        assert done["type"] == "synthesis_complete" and done["cancelled"] is True
        made = synth.chunks_made
        assert made < 100  # stopped well before the first unit's end
        time.sleep(0.3)
        assert synth.chunks_made <= made + 1  # and nothing runs after
        assert synth.calls == ["A long sentence."]
        # The session is still usable.
        ws.send(json.dumps({"text": "Next.", "request_id": "n"}))
        got = read_until(ws, completes(1), timeout=10)
        assert got.controls()[-1].get("cancelled") is None and got.controls()[-1]["request_id"] == "n"


def test_disconnect_mid_message_stops_work_and_others_continue() -> None:
    synth = FakeSynth(chunks=200, delay_s=0.01)
    with serve_app(synth) as srv:
        with ws_connect(srv.url) as ws:
            ws.send(json.dumps({"text": "Talk. And talk. And talk.", "request_id": "d"}))
            read_until(ws, lambda g: "audio" in g.types(), timeout=10)
        time.sleep(0.5)
        made = synth.chunks_made
        time.sleep(0.5)
        assert synth.chunks_made == made and made < 200
        assert synth.calls == ["Talk."]
        with ws_connect(srv.url) as other:
            other.send(json.dumps({"text": "Hi.", "request_id": "o"}))
            assert read_until(other, completes(1), timeout=10).controls()[-1]["type"] == "synthesis_complete"
        assert httpx.get(srv.url + "/ping", timeout=2).status_code == 200


def test_close_finishes_queued_messages_then_1000() -> None:
    with serve_app(FakeSynth(chunks=2, delay_s=0.02)) as srv, ws_connect(srv.url) as ws:
        ws.send(json.dumps({"text": "First.", "request_id": "1"}))
        ws.send(json.dumps({"text": "Second.", "request_id": "2"}))
        ws.send(json.dumps({"type": "close"}))
        got = read_until(ws, until_closed, timeout=10)
    assert [c["request_id"] for c in got.controls() if c["type"] == "synthesis_complete"] == ["1", "2"]
    assert got.close_code == 1000


def test_internal_failure_is_coded_and_session_survives() -> None:
    with serve_app(FakeSynth(fail_on="boom")) as srv, ws_connect(srv.url) as ws:
        ws.send(json.dumps({"text": "boom.", "request_id": "x"}))
        err = read_until(ws, completes(1), timeout=10).controls()[-1]
        assert err["type"] == "error" and err["code"] == "internal" and err["request_id"] == "x"
        assert "secret" not in err["message"]
        ws.send(json.dumps({"text": "fine.", "request_id": "y"}))
        assert read_until(ws, completes(1), timeout=10).controls()[-1]["type"] == "synthesis_complete"


def test_post_streams_pcm_and_wav_and_rejects_bad_input() -> None:
    with serve_app(FakeSynth(chunks=2)) as srv:
        r = httpx.post(srv.url + "/invocations", json={"text": "Hello."}, timeout=10)
        assert r.status_code == 200 and r.headers["content-type"].startswith("audio/pcm")
        assert len(r.content) == 2 * 2400 * 2
        w = httpx.post(srv.url + "/invocations", json={"text": "Hello.", "format": "wav",
                                                         "sample_rate": 16000}, timeout=10)
        assert w.content[:4] == b"RIFF" and len(w.content) == 44 + 2 * 3200
        pcm = np.frombuffer(w.content[44:], "<i2")
        assert np.abs(pcm).max() > 5000
        cases = [({"text": ""}, "text_required"), ({"text": "a", "voice": "../etc"}, "unknown_voice"),
                 ({"text": "a", "speed": 0}, "bad_speed"),
                 ({"text": "a", "sample_rate": 12345}, "bad_sample_rate"),
                 ({"text": "a", "format": "mp3"}, "bad_format")]
        for body, code in cases:
            bad = httpx.post(srv.url + "/invocations", json=body, timeout=10)
            assert bad.status_code == 400 and bad.json()["code"] == code, body
        assert httpx.post(srv.url + "/invocations", content=b"{", timeout=10).json()["code"] == "invalid_json"


def test_voices_route_lists_the_allow_list_once_loaded() -> None:
    gate = threading.Event()

    class SlowLoad(FakeSynth):
        voices_heard: ClassVar[list[str]] = []

        def load(self) -> None:
            gate.wait(10)

        def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
            self.voices_heard.append(voice)
            return super().synthesize(text, voice, speed)

    synth = SlowLoad()
    with serve_app(synth, default_voice="am_adam") as srv:
        loading = httpx.get(srv.url + "/voices", timeout=2)
        assert loading.status_code == 503 and loading.json()["code"] == "busy"
        gate.set()
        deadline = time.monotonic() + 10
        while httpx.get(srv.url + "/ping", timeout=2).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        r = httpx.get(srv.url + "/voices", timeout=2)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        assert r.json() == {"voices": ["af_heart", "am_adam"], "default": "am_adam", "source": None}
        # the default voice is the voice of a message that names none
        assert httpx.post(srv.url + "/invocations", json={"text": "Hello."}, timeout=10).status_code == 200
        assert synth.voices_heard == ["am_adam"]


class PaddedSynth(FakeSynth):
    """Like Kokoro: 0.3 s of silence before and 0.45 s after each unit's sound."""

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        self.calls.append(text)
        tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(24000, dtype=np.float32) / 24000)
        yield np.concatenate([np.zeros(7200, np.float32), tone, np.zeros(10800, np.float32)])


def test_first_clause_join_has_no_long_pause() -> None:
    synth = PaddedSynth()
    with serve_app(synth) as srv, ws_connect(srv.url) as ws:
        ws.send(json.dumps({"text": "The quick brown fox jumps over the lazy dog near the river. Next one.",
                            "request_id": "j"}))
        got = read_until(ws, completes(1))
    assert synth.calls[:2] == ["The quick brown fox jumps", "over the lazy dog near the river."]
    x = np.abs(np.frombuffer(got.audio(), "<i2").astype(np.float32)) / 32768
    loud = x > 0.01
    # Find the silent gaps between sounds: the cut join is short, the sentence join keeps its pause.
    edges = np.flatnonzero(np.diff(loud.astype(np.int8)))
    gaps = [(b - a) / 24000 for a, b in zip(edges[1::2], edges[2::2], strict=False) if (b - a) > 2400]
    assert len(gaps) == 2, gaps
    assert gaps[0] < 0.2  # was 0.75 s before trimming
    assert gaps[1] > 0.7  # between sentences, untouched


def test_each_message_starts_within_30_ms_of_its_first_audible_sample() -> None:
    synth = PaddedSynth()  # 0.3 s of silence before every unit, like Kokoro
    with serve_app(synth) as srv, ws_connect(srv.url) as ws:
        for n in range(2):  # a session's second message is trimmed too
            ws.send(json.dumps({"text": "Hello there. Next one.", "request_id": f"t{n}"}))
        got = read_until(ws, completes(2))
    for request_id in ("t0", "t1"):
        x = np.abs(np.frombuffer(got.audio(request_id), "<i2").astype(np.float32)) / 32768
        loud = np.flatnonzero(x >= 0.01)
        assert loud[0] <= 0.030 * 24000, loud[0] / 24000  # was 0.3 s
        # the pause between the two sentences is the model's own, untouched: 0.45 s + 0.3 s
        edges = np.flatnonzero(np.diff((x >= 0.01).astype(np.int8)))
        gaps = [(b - a) / 24000 for a, b in zip(edges[1::2], edges[2::2], strict=False) if (b - a) > 2400]
        assert len(gaps) == 1 and gaps[0] > 0.7, gaps


def test_client_that_never_reads_is_dropped_and_frees_its_slot() -> None:
    from tests.hardening.test_container_support import RawWsClient

    # ~19 MB of audio for one sentence: more than the socket buffers of both ends can take.
    synth = FakeSynth(chunks=4000)
    with serve_app(synth, max_queue=1, send_timeout_s=1.0) as srv:
        stalled = RawWsClient(srv.port, rcvbuf=4096)
        try:
            stalled.handshake()
            stalled.send_json({"text": "Never read.", "request_id": "stalled"})
            time.sleep(0.5)  # its message now holds the only admission slot, and it never reads
            with ws_connect(srv.url) as other:
                deadline = time.monotonic() + 15
                outcome = None
                while time.monotonic() < deadline:
                    other.send(json.dumps({"text": "Short.", "request_id": f"b{time.monotonic()}"}))
                    outcome = read_until(other, completes(1), timeout=10).controls()[-1]
                    if outcome["type"] == "synthesis_complete":
                        break
                    assert outcome["code"] == "busy"
                    time.sleep(0.5)
                assert outcome is not None and outcome["type"] == "synthesis_complete", (
                    "a client that never reads kept its slot: every other message got 'busy'")
            # ...and its connection is reset, not left waiting behind the unread bytes.
            assert _tcp_state(stalled.sock) == TCP_CLOSE, "the stalled connection is still open"
        finally:
            stalled.close()


TCP_CLOSE = 7  # tcpi_state of a socket that received a reset


def _tcp_state(sock: socket.socket) -> int:
    return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0])
