"""SageMaker's stop: SIGTERM, then SIGKILL 30 s later. A real reference container process (timed backend,
ready in about a second): open sessions mid-synthesis finish their message (or, past --drain-timeout, stop
it) and are closed with 1001, a POST stream ends whole, and the process exits 0 well within the 30 s."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bidi_tts.local_container import LocalContainer
from bidi_tts.protocol import WS_PATH
from bidi_tts_conformance.cases.frames import long_text
from tests.container.timed_server import READY_TIMEOUT_S

SIGKILL_AFTER_S = 30.0  # SageMaker's
LONG = long_text(600)  # 8 sentences


@contextmanager
def container(profile: str, *extra: str) -> Iterator[LocalContainer]:
    proc = LocalContainer(args=["--backend", "timed", "--timed-profile", profile, "--log-level", "warning", *extra])
    try:
        assert proc.wait_ready(READY_TIMEOUT_S, interval=0.1).ready, "the timed container did not start"
        yield proc
    finally:
        proc.stop(grace=5)


@dataclass
class Session:
    """What one session received: control frames by type, audio bytes per request, and its close."""

    ws: ClientConnection
    controls: list[dict[str, object]] = field(default_factory=list)
    audio: dict[str, int] = field(default_factory=dict)
    current: str | None = None
    close_code: int | None = None
    close_reason: str = ""
    closed_at: float | None = None

    async def read(self, total_s: float) -> None:
        try:
            async with asyncio.timeout(total_s):
                async for frame in self.ws:
                    if isinstance(frame, str):
                        control = json.loads(frame)
                        self.controls.append(control)
                        if control["type"] == "synthesis_start":
                            self.current = str(control["request_id"])
                    elif self.current is not None:
                        self.audio[self.current] = self.audio.get(self.current, 0) + len(frame)
        except ConnectionClosed:
            pass
        self.closed_at = time.perf_counter()
        self.close_code, self.close_reason = self.ws.close_code, self.ws.close_reason or ""

    def of(self, kind: str) -> list[dict[str, object]]:
        return [c for c in self.controls if c["type"] == kind]


async def _open(url: str, *texts: str) -> Session:
    ws = await connect(url.replace("http://", "ws://") + WS_PATH, max_size=None, open_timeout=5)
    for i, text in enumerate(texts):
        await ws.send(json.dumps({"text": text, "request_id": f"m{i + 1}"}))
    return Session(ws)


async def _until(predicate: object, within_s: float) -> None:
    deadline = time.perf_counter() + within_s
    while not predicate():  # type: ignore[operator]
        assert time.perf_counter() < deadline, "timed out"
        await asyncio.sleep(0.01)


def _exit_within(proc: LocalContainer, seconds: float) -> int:
    assert proc.proc is not None
    return proc.proc.wait(timeout=seconds)


@pytest.mark.timeout(60)
def test_sigterm_lets_open_sessions_and_post_streams_finish_then_closes_1001_and_exits_0() -> None:
    async def scenario(proc: LocalContainer) -> tuple[list[Session], int, int, float, float]:
        sessions = [await _open(proc.url, LONG, "A queued second message.") for _ in range(2)]
        readers = [asyncio.create_task(s.read(SIGKILL_AFTER_S)) for s in sessions]
        async with httpx.AsyncClient(base_url=proc.url, timeout=20) as http:
            async with http.stream("POST", "/invocations", json={"text": LONG}) as response:
                await _until(lambda: all(s.audio.get("m1") for s in sessions), 10)  # all mid-synthesis
                assert all(not s.of("synthesis_complete") for s in sessions), "the messages were too short"
                sent = time.perf_counter()
                assert proc.proc is not None
                proc.proc.send_signal(signal.SIGTERM)
                posted = sum([len(chunk) async for chunk in response.aiter_bytes()])
        await asyncio.gather(*readers)
        rc = await asyncio.to_thread(_exit_within, proc, SIGKILL_AFTER_S)
        return sessions, posted, rc, sent, time.perf_counter()

    with container("h200-eager") as proc:
        sessions, posted, rc, sent, exited = asyncio.run(scenario(proc))
        with pytest.raises(httpx.ConnectError):  # no longer listening
            httpx.get(proc.url + "/ping", timeout=2)
    assert rc == 0
    assert exited - sent < 10, f"{exited - sent:.1f} s from SIGTERM to exit"
    for s in sessions:
        done = s.of("synthesis_complete")
        assert [c["request_id"] for c in done] == ["m1"], s.controls  # the queued message is not started
        assert done[0].get("cancelled") is not True and done[0]["audio_bytes"] == s.audio["m1"]
        assert [c["request_id"] for c in s.of("synthesis_start")] == ["m1"]
        assert (s.close_code, s.close_reason) == (1001, "the container is shutting down")
        assert s.closed_at is not None and s.closed_at - sent < 5
    assert posted > 0 and posted % 2 == 0


@pytest.mark.timeout(60)
def test_past_the_drain_timeout_the_message_is_stopped_and_the_session_closed_1001() -> None:
    """The 2-core ONNX profile makes a unit in about 1.5 s: 8 sentences outlast a 1 s drain."""

    async def scenario(proc: LocalContainer) -> tuple[Session, int, float, float]:
        session = await _open(proc.url, LONG)
        reader = asyncio.create_task(session.read(SIGKILL_AFTER_S))
        await _until(lambda: session.audio.get("m1"), 15)
        sent = time.perf_counter()
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGTERM)
        await reader
        rc = await asyncio.to_thread(_exit_within, proc, SIGKILL_AFTER_S)
        return session, rc, sent, time.perf_counter()

    with container("cpu-onnx-2core", "--drain-timeout", "1") as proc:
        session, rc, sent, exited = asyncio.run(scenario(proc))
    assert rc == 0
    done = session.of("synthesis_complete")
    assert len(done) == 1 and done[0]["cancelled"] is True, session.controls
    assert done[0]["audio_bytes"] == session.audio["m1"]  # what it had sent, and said so
    assert session.close_code == 1001
    assert session.closed_at is not None and 0.9 < session.closed_at - sent < 1 + 3 + 1
    assert exited - sent < 10, f"{exited - sent:.1f} s from SIGTERM to exit"
