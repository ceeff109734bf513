"""The stand-in's edges: a taken port, one wire frame per PayloadPart, cleanup that lets cancellation through."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode

from bidi_tts.frames import FrameKind
from bidi_tts.gateway import GatewayConfig
from bidi_tts.gateway.server import Gateway, ListenError
from bidi_tts.transports import sagemaker
from bidi_tts.transports._aio import cancel_and_wait, settle
from bidi_tts.transports.sagemaker import SageMakerTarget, SageMakerTransport

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[2]


def test_busy_port_is_one_line_before_the_ca_is_written(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "bidi_tts.gateway", "--upstream", "http://127.0.0.1:9",
                                 "--port", str(port), "--cert-dir", str(tmp_path / "certs")], cwd=ROOT,
                                capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: the port is in use (pick another --port, or 0 for a free one)"]
    assert not (tmp_path / "certs" / "ca.pem").exists()


async def test_gateway_start_on_a_taken_port_raises_listen_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        gateway = Gateway(GatewayConfig("http://127.0.0.1:9", tmp_path, port=taken.getsockname()[1]))
        with pytest.raises(ListenError, match="in use"):
            await gateway.start()


class _WireRecorder(ServerConnection):
    """Records every data frame exactly as it arrived on the wire: (opcode, fin, size)."""

    wire: ClassVar[list[tuple[str, bool, int]]] = []

    def process_event(self, event: Any) -> None:
        if isinstance(event, WsFrame) and event.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            _WireRecorder.wire.append((event.opcode.name.lower(), event.fin, len(event.data)))
        super().process_event(event)


async def _answer_once(ws: ServerConnection) -> None:
    message = await ws.recv()
    await ws.send(json.dumps({"type": "echo", "size": len(message)}))
    await ws.wait_closed()


@pytest.fixture
async def wire_container() -> AsyncIterator[str]:
    _WireRecorder.wire = []
    async with serve(_answer_once, "127.0.0.1", 0, create_connection=_WireRecorder) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"


async def test_partial_partial_complete_is_exactly_three_frames_on_the_wire(
        wire_container: str, tmp_path: Path) -> None:
    async with Gateway(GatewayConfig(wire_container, tmp_path, port=0)) as gateway:
        target = SageMakerTarget("wire", endpoint_url=gateway.url, ca_file=str(gateway.ca_file))
        transport = await SageMakerTransport.open(target, open_timeout=15)
        try:
            await transport.send_fragmented([b'{"text":', b' "Hello', b' there."}'], kind=FrameKind.TEXT)
            answer = json.loads((await transport.receive(timeout=10)).payload)
        finally:
            await transport.close()
    assert answer == {"type": "echo", "size": len('{"text": "Hello there."}')}
    assert _WireRecorder.wire == [("text", False, 8), ("cont", False, 7), ("cont", True, 9)]


# -- cancellation -----------------------------------------------------------------------------------
async def _forever() -> None:
    await asyncio.Event().wait()


async def test_settle_ignores_the_awaited_failure_but_not_the_callers_cancellation() -> None:
    async def boom() -> None:
        raise RuntimeError("already broken")

    await settle(boom(), 1.0)  # a failure of the thing being cleaned up is ignored
    await settle(_forever(), 0.05)  # so is its timeout
    task = asyncio.create_task(settle(_forever(), None))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_cancel_and_wait_propagates_the_callers_cancellation() -> None:
    inner = asyncio.create_task(_forever())

    async def stubborn() -> None:  # takes a while to stop after its cancel
        try:
            await inner
        except asyncio.CancelledError:
            await asyncio.sleep(10)
            raise

    worker = asyncio.create_task(stubborn())
    await asyncio.sleep(0.01)
    outer = asyncio.create_task(cancel_and_wait(worker))
    await asyncio.sleep(0.05)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(outer, 2.0)
    assert outer.cancelled()
    worker.cancel()
    inner.cancel()


class _HangingStream:
    class _Half:
        async def close(self) -> None:
            await _forever()

    input_stream = _Half()
    output_stream = _Half()


async def test_discarding_a_hung_sdk_stream_can_be_cancelled() -> None:
    task = asyncio.create_task(sagemaker._discard(None, _HangingStream()))
    await asyncio.sleep(0.1)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=1.0)  # not after the 2 s + 2 s close timeouts
    assert task in done and task.cancelled()


# -- errors before anything is sent -----------------------------------------------------------------
async def test_an_invalid_region_is_a_config_error_at_once() -> None:
    from bidi_tts.transports.sagemaker import SageMakerConfigError

    with pytest.raises(SageMakerConfigError, match="region"):
        await asyncio.wait_for(SageMakerTransport.open(SageMakerTarget("x", region="not a region!"),
                                                       open_timeout=20), 10)


async def test_missing_credentials_are_named_at_once(monkeypatch: pytest.MonkeyPatch, gateway: Any) -> None:
    from bidi_tts.transports.sagemaker import SageMakerCredentialsError

    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    target = SageMakerTarget("toy", endpoint_url=gateway.url, ca_file=gateway.ca_file)
    with pytest.raises(SageMakerCredentialsError, match="no AWS credentials"):
        await asyncio.wait_for(SageMakerTransport.open(target, open_timeout=20), 10)  # not after open_timeout
