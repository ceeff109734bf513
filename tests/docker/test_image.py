"""The reference container's Docker image, run the way SageMaker runs it (`docker run IMAGE serve`).

Needs a Docker engine and the image (`bash docker/build-image.sh`); skips with the reason otherwise.
The image under test is `$BIDI_TTS_IMAGE` (default `bidi-tts-reference:latest`). The container
publishes 8080 on a host port the engine picks (always free), on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from bidi_tts.audio import bytes_to_seconds, rms_dbfs
from bidi_tts.frames import FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import AudioReceived, ClientSession, ErrorReceived, SynthesisCompleted
from bidi_tts.transports.base import TransportClosed
from bidi_tts.transports.websocket import WebSocketTransport

docker = pytest.importorskip("docker", reason="the docker SDK (a testcontainers dependency) is not installed")

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("BIDI_TTS_IMAGE", "bidi-tts-reference:latest")
SAGEMAKER_LABEL = "com.amazonaws.sagemaker.capabilities.bidirectional-streaming"
SAGEMAKER_PING_DEADLINE_S = 480.0  # SageMaker fails a container that is not healthy after 8 minutes
IMAGE_WEIGHTS = "/opt/kokoro/kokoro-v1.0.int8.onnx"


def _client() -> Any:
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # any failure to reach the engine means: no engine here
        pytest.skip(
            f"no Docker engine answers ({type(exc).__name__}); start dockerd or run docker/ci-setup.sh"
        )
    return client


@pytest.fixture(scope="module")
def client() -> Any:
    """A Docker SDK client for an engine that answers."""
    return _client()


@pytest.fixture(scope="module")
def image(client: Any) -> Any:
    """The image under test, or a skip that says how to build it."""
    try:
        return client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"image {IMAGE} is absent: build it with `bash docker/build-image.sh`")


def _ping(url: str) -> int | None:
    try:
        with urllib.request.urlopen(f"{url}/ping", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


@dataclass
class Running:
    """A container started with `serve`, ready on `url`."""

    container: Any
    url: str
    ready_after_s: float

    def logs(self, tail: int = 40) -> str:
        return self.container.logs(tail=tail).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def served(client: Any, image: Any) -> Iterator[Running]:
    """`docker run IMAGE serve`, waited on until GET /ping answers 200 (SageMaker's 8-minute rule)."""
    container = client.containers.run(
        image.id,
        ["serve"],
        detach=True,
        ports={"8080/tcp": ("127.0.0.1", None)},
        labels={"bidi-tts.test": "tests/docker"},
    )
    try:
        started = time.monotonic()
        url = None
        status = None
        while time.monotonic() - started < SAGEMAKER_PING_DEADLINE_S:
            container.reload()
            if container.status == "exited":
                pytest.fail(f"the container exited during start-up:\n{container.logs(tail=40).decode()}")
            binding = (container.ports.get("8080/tcp") or [None])[0]
            if binding:
                url = f"http://127.0.0.1:{binding['HostPort']}"
                if (status := _ping(url)) == 200:
                    break
            time.sleep(1)
        else:
            pytest.fail(
                f"/ping answered {status} after {SAGEMAKER_PING_DEADLINE_S:.0f} s:\n"
                f"{container.logs(tail=40).decode()}"
            )
        assert url is not None
        yield Running(container, url, time.monotonic() - started)
    finally:
        container.remove(force=True)


def test_image_declares_sagemaker_bidirectional_streaming(image: Any) -> None:
    assert image.labels.get(SAGEMAKER_LABEL) == "true"


def test_image_exposes_8080_and_serves_by_default(image: Any) -> None:
    config = image.attrs["Config"]
    assert "8080/tcp" in config["ExposedPorts"]
    # No ENTRYPOINT and CMD ["serve"]: `docker run IMAGE` and `docker run IMAGE serve` run the same.
    assert not config.get("Entrypoint")
    assert config["Cmd"] == ["serve"]
    assert config["Healthcheck"]["Test"] == ["CMD", "healthcheck"]


def test_image_user_is_not_root(client: Any, image: Any) -> None:
    assert image.attrs["Config"]["User"] not in ("", "root", "0")
    uid = client.containers.run(image.id, ["id", "-u"], remove=True).decode().strip()
    assert uid.isdigit() and int(uid) != 0


def test_image_carries_no_build_tools_caches_or_build_ca(client: Any, image: Any) -> None:
    # The build stages' uv and CA bundle stay behind; only the runtime reaches the final image.
    script = (
        'test ! -e /etc/ssl/certs/build-ca.pem && test -z "$SSL_CERT_FILE" && ! command -v uv'
        ' && test ! -e /opt/uv-tool && test -z "$(ls -A /home/kokoro/.cache /root/.cache 2>/dev/null)"'
        " && echo clean"
    )
    out = client.containers.run(image.id, ["sh", "-c", script], user="0", remove=True).decode().strip()
    assert out == "clean"


def test_serve_answers_ping_within_sagemaker_deadline(served: Running) -> None:
    assert _ping(served.url) == 200
    assert served.ready_after_s < SAGEMAKER_PING_DEADLINE_S
    print(f"/ping 200 after {served.ready_after_s:.1f} s")


def test_server_process_is_not_root_and_is_pid_1(served: Running) -> None:
    # `serve` execs the server, so PID 1 is the server itself (it gets SIGTERM from `docker stop`).
    status = served.container.exec_run(["cat", "/proc/1/status"]).output.decode()
    uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
    assert all(int(u) != 0 for u in uids), status
    cmdline = served.container.exec_run(["cat", "/proc/1/cmdline"]).output.decode().split("\0")
    assert "reference_container" in cmdline and "0.0.0.0" in cmdline and "8080" in cmdline, cmdline


def test_weights_are_baked_in_and_start_up_assembles_nothing(served: Running) -> None:
    assert served.container.exec_run(["test", "-s", IMAGE_WEIGHTS]).exit_code == 0
    assert served.container.exec_run(["test", "-s", "/opt/kokoro/voices/af_heart.bin"]).exit_code == 0
    # The app's own fallback would assemble the ONNX model into the user's cache at start-up.
    found = served.container.exec_run(
        ["sh", "-c", "find /home/kokoro /tmp -type f -name 'kokoro-v1.0.int8.onnx*'"]
    ).output.decode()
    assert found.strip() == ""


async def _synthesize(url: str, text: str, timeout_s: float) -> tuple[bytes, ClientSession, int | None]:
    transport = await WebSocketTransport.open(url)
    session = ClientSession()
    pcm = bytearray()
    done = False
    try:
        # BINARY, as SageMaker delivers every client PayloadPart without DataType.
        payload = session.synthesize(SynthesizeRequest(text=text), at=time.perf_counter())
        await transport.send(payload.encode(), kind=FrameKind.BINARY)
        async with asyncio.timeout(timeout_s):
            while not done:
                for event in session.receive_frame(await transport.receive()):
                    match event:
                        case AudioReceived(pcm=chunk):
                            pcm += chunk
                        case SynthesisCompleted():
                            done = True
                        case ErrorReceived(code=code, message=message):
                            pytest.fail(f"error frame {code}: {message}")
            await transport.send(session.close(), kind=FrameKind.TEXT)
            close_code = (await transport.wait_closed(timeout=10)).code
    except TransportClosed as closed:
        close_code = closed.code
    finally:
        await transport.close()
    return bytes(pcm), session, close_code


def test_one_real_synthesis_over_the_websocket(served: Running) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    pcm, session, close_code = asyncio.run(_synthesize(served.url, text, timeout_s=60))
    assert session.violations == []
    record = next(iter(session.records.values()))
    assert record.done and record.error_code is None
    assert len(pcm) == record.audio_bytes and len(pcm) % 2 == 0
    seconds = bytes_to_seconds(len(pcm), record.sample_rate)
    assert 0.8 < seconds < 15, f"{seconds:.2f} s of audio for a nine-word sentence"
    level = rms_dbfs(pcm)
    assert level > -40.0, f"audio RMS {level:.1f} dBFS: silent"
    assert close_code == 1000
    print(f"{seconds:.2f} s of audio at {level:.1f} dBFS; first audio after {record.ttfa_s:.3f} s")


def test_healthcheck_turns_healthy(served: Running) -> None:
    deadline = time.monotonic() + 40  # the HEALTHCHECK runs every 10 s
    health = None
    while time.monotonic() < deadline:
        served.container.reload()
        health = served.container.attrs["State"].get("Health", {}).get("Status")
        if health == "healthy":
            break
        time.sleep(1)
    assert health == "healthy", served.logs()


def test_docker_stop_ends_the_server_cleanly(served: Running) -> None:
    """Runs last (it stops the module's container): SIGTERM, as `docker stop` and SageMaker's
    scale-in send it, reaches the server as PID 1, which exits 0 well before the kill."""
    started = time.monotonic()
    served.container.stop(timeout=30)
    took = time.monotonic() - started
    served.container.reload()
    assert served.container.attrs["State"]["ExitCode"] == 0, served.logs()
    assert took < 20, f"stopping took {took:.1f} s"
