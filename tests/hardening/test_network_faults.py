"""Network faults between client and container: the client library raises typed errors and never
hangs past its deadline (issue 7, part 2)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from bidi_tts.frames import FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession, SynthesisCompleted
from bidi_tts.transports.base import ConnectError, TransportClosed, TransportTimeout
from bidi_tts.transports.websocket import WebSocketTransport
from tests.hardening.fault_proxy import FaultProxy, Faults
from tests.toys.good import ServerThread, ToyConfig, ToyContainer

TEXT = "The first sentence is here. A second sentence follows it. And a third one ends the message."


@pytest.fixture(scope="module")
def toy() -> Iterator[ServerThread]:
    # Real-time pacing, so a message streams over about two seconds.
    with ServerThread(ToyContainer(ToyConfig(realtime_factor=1.0, frame_s=0.05)).app()) as server:
        yield server


async def _one_message(url: str, deadline_s: float) -> tuple[ClientSession, float]:
    """Send one message and read until synthesis_complete, under one overall deadline."""
    transport = await WebSocketTransport.open(url, open_timeout=5)
    session = ClientSession()
    try:
        await transport.send(session.synthesize(SynthesizeRequest(TEXT), at=time.perf_counter()), kind=FrameKind.BINARY)
        end = time.monotonic() + deadline_s
        while True:
            frame = await transport.receive(timeout=max(0.0, end - time.monotonic()))
            if any(isinstance(e, SynthesisCompleted) for e in session.receive_frame(frame)):
                return session, time.monotonic()
    finally:
        await transport.close()


async def test_latency_shifts_first_audio_by_the_injected_amount(toy: ServerThread) -> None:
    session, _ = await _one_message(toy.url, 20)
    base = next(iter(session.records.values())).ttfa_s
    async with FaultProxy("127.0.0.1", toy.port, Faults(latency_s=0.2)) as proxy:
        session, _ = await _one_message(proxy.url, 20)
    delayed = next(iter(session.records.values())).ttfa_s
    assert base is not None and delayed is not None
    # synthesis_start and the first audio frame each pay the latency at most once in a row.
    assert 0.15 <= delayed - base <= 1.0, (base, delayed)


async def test_connection_cut_mid_stream_raises_transport_closed(toy: ServerThread) -> None:
    async with FaultProxy("127.0.0.1", toy.port, Faults(cut_after_bytes=20_000)) as proxy:
        started = time.monotonic()
        with pytest.raises(TransportClosed) as info:
            await _one_message(proxy.url, 20)
        assert time.monotonic() - started < 10
    assert info.value.code in (None, 1006)  # abnormal closure: no close frame was received


async def test_stalled_stream_times_out_at_the_deadline(toy: ServerThread) -> None:
    async with FaultProxy("127.0.0.1", toy.port, Faults(stall_after_bytes=20_000)) as proxy:
        started = time.monotonic()
        with pytest.raises(TransportTimeout):
            await asyncio.wait_for(_one_message(proxy.url, 1.5), timeout=15)
        elapsed = time.monotonic() - started
    assert elapsed < 8, f"the client hung for {elapsed:.1f} s past a 1.5 s deadline"


async def test_refused_connection_is_a_connect_error() -> None:
    from tests.toys.good import free_port

    with pytest.raises(ConnectError):
        await WebSocketTransport.open(f"http://127.0.0.1:{free_port()}", open_timeout=2)
