"""The request ladder's URL client against a container that answers with a Content-Length body.

The AWS sample's kokoro-cpu container answers POST /invocations with one whole WAV and a
Content-Length. ``http.client``'s ``read1`` never marks such a response closed after its last byte,
so the keep-alive connection refused the client's next request (``ResponseNotReady``) and the ladder
counted every second request as a container error. A chunked body (the reference container) hid it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bidi_tts_loadtest.ladder.request import UrlJob
from bidi_tts_loadtest.ladder.rung import Collected, Sample

BODY = b"RIFF" + bytes(4000)


class WholeBodyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn answers

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "audio/wav")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def whole_body_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), WholeBodyHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_every_request_on_one_keep_alive_connection_counts_its_whole_body(whole_body_url: str) -> None:
    job = UrlJob(whole_body_url, timeout_s=5.0)
    now = time.perf_counter()
    collected = Collected(loop="closed", level=1, started_at=now, stop_at=now, measure_s=0.0, ended_at=now)
    try:
        for _ in range(4):
            job("Hello there.", Sample(sent_at=0.0), collected)
    finally:
        job.close()
    assert [s.error for s in collected.samples] == [None] * 4
    assert all(s.audio_s == len(BODY) / 48000 for s in collected.samples)
