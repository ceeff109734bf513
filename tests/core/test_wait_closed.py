"""``wait_closed``, written once for blocking and asyncio transports: frames are drained until the
stream ends, and a stream that keeps sending still times out."""

from __future__ import annotations

import asyncio
import time

import pytest

from bidi_tts.frames import Frame, FrameKind
from bidi_tts.transports.base import AsyncWaitClosed, SyncWaitClosed, TransportClosed, TransportTimeout


class _Sync(SyncWaitClosed):
    def __init__(self, frames_before_close: int | None) -> None:
        self.left = frames_before_close
        self.timeouts: list[float | None] = []

    def receive(self, timeout: float | None = None) -> Frame:
        self.timeouts.append(timeout)
        if self.left == 0:
            raise TransportClosed(1000, "bye")
        if self.left is not None:
            self.left -= 1
        time.sleep(0.01)
        return Frame(b"\x00\x00", FrameKind.BINARY, time.perf_counter())


class _Async(AsyncWaitClosed):
    def __init__(self, frames_before_close: int | None) -> None:
        self.left = frames_before_close

    async def receive(self, timeout: float | None = None) -> Frame:
        if self.left == 0:
            raise TransportClosed(1000, "bye")
        if self.left is not None:
            self.left -= 1
        await asyncio.sleep(0.01)
        return Frame(b"\x00\x00", FrameKind.BINARY, time.perf_counter())


def test_sync_drains_frames_until_the_close_within_a_shrinking_bound() -> None:
    t = _Sync(3)
    assert t.wait_closed(5.0).code == 1000
    assert len(t.timeouts) == 4 and all(b is not None and 0 < b <= 5.0 for b in t.timeouts)
    assert t.timeouts == sorted((b or 0.0 for b in t.timeouts), reverse=True)  # each read gets what is left


def test_sync_times_out_on_a_stream_that_keeps_sending() -> None:
    started = time.monotonic()
    with pytest.raises(TransportTimeout, match=r"not closed within 0\.1 s"):
        _Sync(None).wait_closed(0.1)
    assert time.monotonic() - started < 1.0


def test_async_drains_frames_until_the_close_and_times_out_on_an_endless_stream() -> None:
    assert asyncio.run(_Async(3).wait_closed(5.0)).code == 1000
    with pytest.raises(TransportTimeout, match=r"not closed within 0\.1 s"):
        asyncio.run(_Async(None).wait_closed(0.1))
