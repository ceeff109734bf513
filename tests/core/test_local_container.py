"""bidi_tts.local_container: the pinned start command, waiting for /ping, stopping and closing the log.

The reference container itself is started by the suite's process-target tests; here a stand-in
child process (a few lines of http.server) takes its place, so the life cycle is checked in a second.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bidi_tts import local_container
from bidi_tts.local_container import LocalContainer, start_command

# Serves GET /ping with 200 on the port given after --port; prints one line to show where its output goes.
STAND_IN = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Ping(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/ping" else 404); self.end_headers()
    def log_message(self, *args): pass
print("stand-in serving", flush=True)
HTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), Ping).serve_forever()
"""


def test_the_start_command_is_the_pinned_one() -> None:
    assert start_command(8123, "--backend", "timed") == [
        sys.executable, "-m", "reference_container", "--host", "127.0.0.1", "--port", "8123", "--backend", "timed"]


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_container, "start_command",
                        lambda port, *args: [sys.executable, "-c", STAND_IN, "--port", str(port), *args])


@pytest.mark.usefixtures("stand_in")
def test_it_starts_waits_for_ping_and_stops(tmp_path: Path) -> None:
    log = tmp_path / "container.log"
    container = LocalContainer(log=log, env={"BIDI_TTS_TEST": "1"})
    try:
        waited = container.wait_ready(20, interval=0.05)
        assert waited.ready, waited
        assert container.url == f"http://127.0.0.1:{container.port}" and container.alive()
    finally:
        container.stop()
    assert not container.alive() and container.returncode is not None
    assert "stand-in serving" in log.read_text()
    container.stop()  # twice is harmless


def test_a_process_that_exits_ends_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_container, "start_command", lambda port, *args: [sys.executable, "-c", "exit(3)"])
    container = LocalContainer()
    waited = container.wait_ready(20, interval=0.05)
    assert waited.outcome == "exited" and container.returncode == 3
    container.stop()
