"""loadtest.browser_ttfa in headless Chromium against toy containers whose timing is known exactly.

A toy with a fixed first-audio delay must come out as that delay plus a bounded overhead in both
relay shapes, with the split adding up; a toy that stalls mid-stream must show up as an underrun of
about the stall's length, while the steady toy shows none.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.websockets import WebSocket

from bidi_tts import protocol
from bidi_tts_loadtest.relay import browser_ttfa
from tests.toys.good import ServerThread, ToyConfig, ToyContainer, free_port

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
needs_chromium = pytest.mark.skipif(
    shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
    reason="Debian's chromium is not installed (apt-get install chromium); CI installs it",
)

DELAY_MS = 400.0
OVERHEAD_MS = 600.0  # relay hop + decode + worklet and output buffering (about 45 ms idle), on a loaded machine
TEXT = "Hello there, friend."
STALL_AFTER_FRAMES = 2  # 0.2 s of audio (the toy's frames are 0.1 s)
STALL_S = 0.8
SILENT_LEAD_S = 0.3


class StallingToy(ToyContainer):
    """Sends the first frames of a message, goes silent for STALL_S, then sends the rest."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        index = 0
        async for chunk in self.synth.stream(request):
            if index == STALL_AFTER_FRAMES:
                await asyncio.sleep(STALL_S)
            await ws.send_bytes(chunk)
            total += len(chunk)
            index += 1
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class SilentLeadToy(ToyContainer):
    """Starts every message with SILENT_LEAD_S of digital silence before the tone."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        silence = bytes(2 * int(SILENT_LEAD_S * request.sample_rate))
        await ws.send_bytes(silence)
        total = len(silence)
        async for chunk in self.synth.stream(request):
            await ws.send_bytes(chunk)
            total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


def measure(url: str, *extra: str) -> dict[str, Any]:
    args = browser_ttfa.build_parser().parse_args(["--container-url", url, "--message-timeout", "30", *extra])
    return browser_ttfa.run(args)


@pytest.fixture(scope="module")
def steady_report() -> Iterator[dict[str, Any]]:
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); CI installs it")
    # the toy in its own process, so that its timing does not wait on this one's GIL
    port = free_port()
    toy = subprocess.Popen([sys.executable, "-m", "tests.toys.good", "--port", str(port),
                            "--first-audio-delay", str(DELAY_MS / 1000)], cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline and toy.poll() is None, "the toy container did not start"
                time.sleep(0.1)
        yield measure(f"http://127.0.0.1:{port}", "--messages", "3", "--warmup", "1", "--text", TEXT)
    finally:
        toy.terminate()
        toy.wait(timeout=10)


@needs_chromium
@pytest.mark.parametrize("shape", ["ws", "sse"])
def test_first_audible_is_the_known_ttfa_plus_a_bounded_overhead(steady_report: dict[str, Any], shape: str) -> None:
    result = steady_report["shapes"][shape]
    assert result["messages"] == 3 and result["failed"] == 0, result["errors"]
    for record in result["records"]:
        audible, split = record["first_audible_ms"], record["split"]
        container = split["container_first_byte"]
        assert DELAY_MS <= container <= DELAY_MS + 1000, split  # the toy's own lateness: loose, not measured here
        assert DELAY_MS <= audible and audible - container <= OVERHEAD_MS, record
        assert record["ttfb_ms"] <= audible
        # the parts add up to the whole (connect and LLM wait are zero or absent here)
        parts = sum(split[k] or 0 for k in browser_ttfa.STAGES)
        assert parts == pytest.approx(audible, abs=0.01)
        assert record["sample_rate"] == 24000 and record["context"]["sample_rate"] == 24000
        assert record["audio_ms"] == pytest.approx(len(TEXT) * 20, abs=1)
    stats = result["first_audible_ms"]
    assert stats["count"] == 3 and stats["min"] <= stats["p50"] <= stats["p95"] <= stats["max"]


@needs_chromium
def test_a_steady_stream_has_no_underrun(steady_report: dict[str, Any]) -> None:
    for result in steady_report["shapes"].values():
        assert result["underruns"] == 0 and result["underrun_ms"]["max"] == 0


@needs_chromium
def test_a_stalled_stream_shows_up_as_an_underrun_of_about_the_stall() -> None:
    with ServerThread(StallingToy(ToyConfig()).app()) as toy:
        report = measure(toy.url, "--messages", "1", "--warmup", "0", "--text", "A" * 60 + ".")  # 1.22 s of audio
    expected_ms = (STALL_S - STALL_AFTER_FRAMES * 0.1) * 1000  # the buffer held 0.2 s when the stall began
    for shape, result in report["shapes"].items():
        assert result["failed"] == 0, (shape, result["errors"])
        record = result["records"][0]
        assert record["underruns"] == 1, (shape, record["underrun_spans"])
        assert expected_ms - 150 <= record["underrun_ms"] <= expected_ms + 200, (shape, record["underrun_ms"])


@needs_chromium
def test_first_audible_is_the_first_sample_heard_not_the_first_byte() -> None:
    with ServerThread(SilentLeadToy(ToyConfig()).app()) as toy:
        report = measure(toy.url, "--messages", "1", "--warmup", "0", "--text", TEXT)
    for shape, result in report["shapes"].items():
        record = result["records"][0]
        assert result["failed"] == 0, (shape, result["errors"])
        # the silence arrives first and plays first: nothing is audible until it has played out
        gap = record["first_audible_ms"] - record["ttfb_ms"]
        assert SILENT_LEAD_S * 1000 <= gap <= SILENT_LEAD_S * 1000 + OVERHEAD_MS, (shape, gap)
        # and the split names it, counted in frames: to within a sample or two of the tone's rise
        assert record["split"]["leading_silence"] == pytest.approx(SILENT_LEAD_S * 1000, abs=0.1), (shape, record)


# -- bad usage: one line on stderr, exit 4 (69 when nothing answers), in seconds ---------------------------------
def run_cli(*args: str, env: dict[str, str] | None = None, code: int = 4) -> subprocess.CompletedProcess[str]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest.browser_ttfa", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=env)
    assert time.monotonic() - began < 20
    assert done.returncode == code, done  # docs/exit-codes.md: 4 usage, 69 unreachable
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done


def test_no_scheme() -> None:
    assert "needs a scheme and a host" in run_cli("--container-url", "127.0.0.1:8080").stderr


def test_nothing_listening() -> None:
    # a stand-in executable for the browser: the run stops before it would be launched
    done = run_cli("--container-url", f"http://127.0.0.1:{free_port()}", "--chromium", sys.executable, code=69)
    assert "cannot reach the upstream" in done.stderr


def test_busy_relay_port() -> None:
    with ServerThread(ToyContainer().app()) as toy, socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = run_cli("--container-url", toy.url, "--chromium", sys.executable, "--relay-port", str(port))
    assert done.stderr.strip() == f"browser_ttfa: cannot listen on 127.0.0.1:{port}: the port is in use"


def test_missing_chromium() -> None:
    done = run_cli("--container-url", "http://127.0.0.1:9", "--chromium", "/nonexistent/chromium")
    assert "'/nonexistent/chromium' is not an executable" in done.stderr
    done = run_cli("--container-url", "http://127.0.0.1:9", env={"PATH": "/nonexistent", "HOME": "/tmp"})
    assert "Chromium not found: install Debian's chromium" in done.stderr
