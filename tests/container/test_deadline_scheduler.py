"""The Scheduler with a fake synthesizer: what order each policy really serves units in."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from reference_container.scheduler import JobCancelled, Scheduler
from tests.container.scheduling import drain, wait_for

RATE = 100  # samples per second of the fake synthesizer: tiny arrays, real durations


class FakeSynth:
    """Every unit speaks `audio_s` seconds; the unit named `hold` waits until `release` is set."""

    def __init__(self, audio_s: float = 3.0, hold: str | None = None) -> None:
        self.audio_s = audio_s
        self.hold = hold
        self.release = threading.Event()
        self.holding = threading.Event()
        self.order: list[str] = []

    def __call__(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        self.order.append(text)
        if text == self.hold:
            self.holding.set()
            self.release.wait(5)
        yield np.zeros(int(self.audio_s * RATE), dtype=np.float32)




async def serve_order(policy: str) -> list[str]:
    """A's 4-sentence message is under way (A0 spoken: 3 s in hand) when B's first message arrives."""
    synth = FakeSynth(hold="A1")
    s = Scheduler(synth, workers=1, policy=policy, sample_rate=RATE)
    await s.start()
    try:
        a = [s.submit("A", f"A{i}", "v", 1.0) for i in range(4)]
        # A1 runs (nothing else waits); hold it so the rest queue up behind it.
        await wait_for(synth.holding)
        b = s.submit("B", "B0", "v", 1.0)
        synth.release.set()
        await asyncio.gather(*(drain(s, j) for j in [*a, b]))
    finally:
        await s.stop()
    return synth.order


async def test_deadline_serves_a_new_message_before_sentences_with_slack() -> None:
    assert await serve_order("deadline") == ["A0", "A1", "B0", "A2", "A3"]


async def test_round_robin_and_fifo_make_the_new_message_wait() -> None:
    # The same load under the old policies: B's first audio waits behind A's spare sentence(s).
    assert await serve_order("round-robin") == ["A0", "A1", "A2", "B0", "A3"]
    assert await serve_order("fifo") == ["A0", "A1", "A2", "A3", "B0"]


async def test_late_unit_runs_before_new_messages() -> None:
    """A's audio has run out (0.01 s spoken) while X hogged the model: A1 goes before B0 and C0."""
    synth = FakeSynth(audio_s=0.01, hold="X0")
    s = Scheduler(synth, workers=1, sample_rate=RATE, deadline_margin_s=0.0)
    await s.start()
    try:
        a0 = s.submit("A", "A0", "v", 1.0)
        await drain(s, a0)
        x = s.submit("X", "X0", "v", 1.0)
        await wait_for(synth.holding)
        a1 = s.submit("A", "A1", "v", 1.0)  # submitted before its session's playback ran out...
        await asyncio.sleep(0.05)  # ...which it has now
        b, c = s.submit("B", "B0", "v", 1.0), s.submit("C", "C0", "v", 1.0)
        assert s.deadline(a1) < s.deadline(b) < s.deadline(c)
        synth.release.set()
        await asyncio.gather(*(drain(s, j) for j in (x, a1, b, c)))
    finally:
        await s.stop()
    assert synth.order == ["A0", "X0", "A1", "B0", "C0"]


async def test_cancel_under_deadline_drops_queued_units_and_serves_the_rest() -> None:
    synth = FakeSynth(hold="A0")
    s = Scheduler(synth, workers=1, sample_rate=RATE)
    await s.start()
    try:
        a = [s.submit("A", f"A{i}", "v", 1.0) for i in range(3)]
        b = s.submit("B", "B0", "v", 1.0)
        await wait_for(synth.holding)
        assert s.cancel_session("A") == 3  # A0 running (flagged), A1 and A2 queued (dropped)
        synth.release.set()
        for job in a:
            with pytest.raises(JobCancelled):
                await drain(s, job)
        assert await drain(s, b) == 3 * RATE
    finally:
        await s.stop()
    assert synth.order == ["A0", "B0"]
    assert "A" not in s._queues.queues


async def test_estimates_follow_the_audio_actually_made() -> None:
    synth = FakeSynth(audio_s=2.0)
    s = Scheduler(synth, workers=1, sample_rate=RATE)
    await s.start()
    try:
        for i in range(20):
            await drain(s, s.submit("A", f"unit {i:03d}", "v", 1.0))  # 8 characters, 2 s of audio
    finally:
        await s.stop()
    assert s.estimate.audio_s_per_char == pytest.approx(2.0 / 8, rel=0.05)
