"""bidi_tts.probe and bidi_tts.deadline: one TCP connect, one GET /ping, a bounded wait for 200."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from bidi_tts import probe
from bidi_tts.deadline import Deadline
from bidi_tts.local_container import free_port


class _Ping(BaseHTTPRequestHandler):
    statuses: ClassVar[list[int]] = [200]  # answered in turn; the last one repeats

    def do_GET(self) -> None:
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        self.send_response(status if self.path == "/ping" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Ping]]]:
    handler = type("Ping", (_Ping,), {"statuses": [200]})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def silent() -> Iterator[str]:
    """A port that accepts connections and never says a word."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


def test_ping_answers_the_status_and_none_when_nothing_listens(server: tuple[str, type[_Ping]]) -> None:
    url, handler = server
    handler.statuses = [503]
    assert probe.ping(url) == 503
    assert probe.ping_status(url + "/") == 503  # a trailing slash is not doubled
    assert probe.ping_status(f"http://127.0.0.1:{free_port()}") is None
    assert probe.ping_status("http://127.0.0.1:port") is None  # not a URL


def test_each_failure_has_its_reason(silent: str) -> None:
    with pytest.raises(probe.Unanswered) as refused:
        probe.ping(f"http://127.0.0.1:{free_port()}")
    assert refused.value.reason == "refused"
    with pytest.raises(probe.Unanswered) as timeout:
        probe.ping(silent, timeout=0.2)
    assert timeout.value.reason == "timeout"
    with pytest.raises(probe.Unanswered) as unresolved:
        probe.connect("http://no-such-host.invalid:8080", timeout=2)
    assert unresolved.value.reason == "unresolved"
    probe.connect(silent)  # a TCP connect needs no answer


def test_something_that_is_not_http_is_named(silent: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]

        def answer_garbage() -> None:
            conn, _ = s.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")

        thread = threading.Thread(target=answer_garbage, daemon=True)
        thread.start()
        with pytest.raises(probe.Unanswered) as caught:
            probe.ping(f"http://127.0.0.1:{port}", timeout=2)
        thread.join(2)
    assert caught.value.reason == "not_http"


def test_the_wait_ends_ready_when_ping_turns_200(server: tuple[str, type[_Ping]]) -> None:
    url, handler = server
    handler.statuses = [503, 503, 200]
    notes: list[tuple[int | None, float]] = []
    waited = probe.wait_for_ping(url, 5, interval=0.01, note=lambda s, e: notes.append((s, e)), note_every=0.0)
    assert waited.ready and waited.status == 200
    assert [s for s, _ in notes] == [503, 503]


def test_the_wait_ends_when_the_process_exits_or_time_runs_out(server: tuple[str, type[_Ping]]) -> None:
    url, handler = server
    handler.statuses = [503]
    exited = probe.wait_for_ping(url, 5, alive=lambda: False, interval=0.01)
    assert (exited.outcome, exited.status) == ("exited", 503)
    started = time.monotonic()
    late = probe.wait_for_ping(url, 0.2, interval=0.05)
    assert late.outcome == "timeout" and late.status == 503
    assert 0.2 <= time.monotonic() - started < 2
    settled = probe.wait_for_ping(url, 1, settled=lambda s: s != 200, interval=0.01)
    assert settled.ready and settled.status == 503  # "settled" is the caller's: here, anything but 200


def test_a_deadline_counts_down_on_the_monotonic_clock() -> None:
    deadline = Deadline(0.05)
    assert not deadline.expired and 0 < deadline.remaining() <= 0.05
    time.sleep(0.06)
    assert deadline.expired and deadline.remaining() == 0.0 and deadline.elapsed() >= 0.05
    assert Deadline(None).remaining() == float("inf") and not Deadline(None).expired
