"""Helpers of the scheduler tests (fake synthesizers drive `reference_container.scheduler`)."""

from __future__ import annotations

import asyncio
import threading

from reference_container.scheduler import Job, Scheduler


async def drain(s: Scheduler, job: Job) -> int:
    """Every sample the scheduler streams for `job`."""
    return sum([len(c) async for c in s.stream(job)])


async def wait_for(event: threading.Event) -> None:
    """Until the fake synthesizer sets `event` (bounded)."""
    for _ in range(500):
        if event.is_set():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the fake synthesizer never got there")
