"""The pinned command: ``python -m bidi_tts.gateway --upstream URL --port PORT --cert-dir DIR``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bidi_tts.frames import FrameKind
from bidi_tts.transports.sagemaker import SageMakerTarget, SageMakerTransport
from tests.toys.good import ServerThread, ToyContainer

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]

ROOT = Path(__file__).resolve().parents[2]


def test_help_documents_every_option() -> None:
    result = subprocess.run([sys.executable, "-m", "bidi_tts.gateway", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=30, check=True)
    for option in ("--upstream", "--port", "--cert-dir", "--host", "--endpoint-name", "--latency",
                   "--drop-after", "--stall-after", "--fail-after", "--reject", "--ping-interval"):
        assert option in result.stdout


def test_bad_upstream_is_refused(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "bidi_tts.gateway", "--upstream", "ftp://x",
                             "--port", "0", "--cert-dir", str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0 and "--upstream" in result.stderr


@pytest.fixture
def gateway_process(tmp_path: Path) -> Iterator[tuple[ToyContainer, str, Path, subprocess.Popen[str]]]:
    toy = ToyContainer()
    with ServerThread(toy.app()) as server:
        process = subprocess.Popen(
            [sys.executable, "-m", "bidi_tts.gateway", "--upstream", server.url, "--port", "0",
             "--cert-dir", str(tmp_path / "certs"), "--log-level", "DEBUG"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert process.stdout is not None
            deadline = time.monotonic() + 30
            url = ca = None
            while (url is None or ca is None) and time.monotonic() < deadline:
                line = process.stdout.readline()
                if not line:
                    break
                if line.startswith("gateway listening on "):
                    url = line.split()[-1]
                elif line.startswith("CA certificate: "):
                    ca = Path(line.split(": ", 1)[1].strip())
            assert url is not None and ca is not None, "gateway did not print its URL and CA"
            yield toy, url, ca, process
        finally:
            process.terminate()
            process.wait(timeout=10)


@pytest.mark.asyncio
async def test_command_serves_the_sdk(gateway_process: tuple[ToyContainer, str, Path, subprocess.Popen[str]],
                                      tmp_path: Path) -> None:
    toy, url, ca, process = gateway_process
    assert url.startswith("https://127.0.0.1:")
    assert ca == tmp_path / "certs" / "ca.pem" and ca.read_text().startswith("-----BEGIN CERTIFICATE-----")
    transport = await SageMakerTransport.open(
        SageMakerTarget("cli-endpoint", endpoint_url=url, ca_file=str(ca)), open_timeout=15)
    try:
        await transport.send(json.dumps({"text": "From the command line."}), kind=FrameKind.TEXT)
        kinds = []
        while True:
            frame = await transport.receive(timeout=10)
            kinds.append(frame.kind)
            if b"synthesis_complete" in frame.payload:
                break
    finally:
        await transport.close()
    assert kinds[0] is FrameKind.TEXT and FrameKind.BINARY in kinds
    assert toy.frames_received == ["text"]
    process.terminate()
    _, stderr = process.communicate(timeout=10)
    assert "to container opcode=text fin=True" in stderr  # the debug record of container frames
