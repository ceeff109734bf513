"""Scheduler: round-robin fairness, bound -> Busy, cancel, failures, off the event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from reference_container.scheduler import Busy, JobCancelled, JobFailed, Scheduler
from tests.container.scheduling import drain


class Recorder:
    def __init__(self, chunks: int = 1, delay_s: float = 0.0) -> None:
        self.order: list[str] = []
        self.chunks = chunks
        self.delay_s = delay_s
        self.made = 0
        self.threads: set[str] = set()

    def __call__(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        self.order.append(text)
        self.threads.add(threading.current_thread().name)
        for _ in range(self.chunks):
            time.sleep(self.delay_s)
            self.made += 1
            yield np.zeros(10, dtype=np.float32)



async def test_round_robin_across_sessions() -> None:
    rec = Recorder(delay_s=0.02)
    s = Scheduler(rec, workers=1, policy="round-robin")
    await s.start()
    try:
        long_jobs = [s.submit("A", f"A{i}", "v", 1.0) for i in range(5)]
        short = s.submit("B", "B0", "v", 1.0)
        other = s.submit("C", "C0", "v", 1.0)
        await asyncio.gather(*(drain(s, j) for j in [*long_jobs, short, other]))
    finally:
        await s.stop()
    # B and C do not wait behind all of A's sentences.
    assert rec.order[:3] == ["A0", "B0", "C0"]
    assert rec.order[3:] == ["A1", "A2", "A3", "A4"]


async def test_admit_bound_raises_busy_and_release_frees() -> None:
    s = Scheduler(Recorder(), workers=1, max_messages=2)
    t1, t2 = s.admit(), s.admit()
    with pytest.raises(Busy):
        s.admit()
    t1.release()
    t1.release()  # idempotent
    assert s.active_messages == 1
    with s.admit():
        assert s.active_messages == 2
    t2.release()
    assert s.active_messages == 0


async def test_cancel_drops_queued_and_stops_running_between_chunks() -> None:
    rec = Recorder(chunks=50, delay_s=0.01)
    s = Scheduler(rec, workers=1)
    await s.start()
    try:
        running = s.submit("A", "first", "v", 1.0)
        queued = s.submit("A", "second", "v", 1.0)
        other = s.submit("B", "b", "v", 1.0)
        got = 0
        with pytest.raises(JobCancelled):
            async for _ in s.stream(running):
                got += 1
                if got == 3:
                    assert s.cancel_session("A") == 2
        with pytest.raises(JobCancelled):
            await drain(s, queued)
        assert await drain(s, other) == 500  # B unaffected
    finally:
        await s.stop()
    assert "second" not in rec.order
    assert rec.made < 50 + 50  # the first job stopped early


async def test_failure_is_coded_not_forwarded() -> None:
    def broken(text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        raise KeyError("internal detail")
        yield np.zeros(1, dtype=np.float32)

    s = Scheduler(broken, workers=1)
    await s.start()
    try:
        job = s.submit("A", "x", "v", 1.0)
        with pytest.raises(JobFailed) as info:
            await drain(s, job)
        assert "internal detail" not in str(info.value)
        # The worker survives a failure.
        s._synth = Recorder()
        assert await drain(s, s.submit("A", "y", "v", 1.0)) == 10
    finally:
        await s.stop()


async def test_synthesis_runs_off_the_event_loop() -> None:
    rec = Recorder(chunks=1, delay_s=0.5)
    s = Scheduler(rec, workers=1)
    await s.start()
    try:
        job = s.submit("A", "slow", "v", 1.0)
        ticks = 0
        started = time.perf_counter()
        consumer = asyncio.create_task(drain(s, job))
        while not consumer.done():
            await asyncio.sleep(0.01)
            ticks += 1
        await consumer
    finally:
        await s.stop()
    assert time.perf_counter() - started >= 0.45
    assert ticks >= 20  # the loop kept running while the model worked
    assert all(name.startswith("synth") for name in rec.threads)


async def test_timings_recorded() -> None:
    s = Scheduler(Recorder(delay_s=0.05), workers=1)
    await s.start()
    try:
        job = s.submit("A", "x", "v", 1.0)
        await drain(s, job)
    finally:
        await s.stop()
    assert job.queue_wait_s is not None and job.queue_wait_s >= 0
    assert job.synth_s is not None and job.synth_s >= 0.04


async def test_lead_is_the_sessions_unplayed_audio() -> None:
    now = [100.0]
    s = Scheduler(lambda text, voice, speed: iter([np.zeros(24_000, dtype=np.float32)]), clock=lambda: now[0])
    await s.start()
    try:
        assert s.lead_s("a") == 0.0  # nothing handed out yet
        await drain(s, s.submit("a", "One.", "af_heart", 1.0))  # 1 s of audio at t=100
        assert s.lead_s("a") == pytest.approx(1.0) and s.lead_s("b") == 0.0
        # A reader that reports what it sends (streaming.message_audio: after its cuts) is the clock.
        await drain(s, s.submit("b", "One.", "af_heart", 1.0, reader_reports_sent=True))
        assert s.lead_s("b") == 0.0  # made and handed out, but nothing reached the listener yet
        s.sent("b", 0.7)
        assert s.lead_s("b") == pytest.approx(0.7)
        now[0] = 100.4
        assert s.lead_s("a") == pytest.approx(0.6)
        now[0] = 102.0
        assert s.lead_s("a") == 0.0  # played out: never negative
    finally:
        await s.stop()
