"""The serving loop: order, similar lengths, windows, bounds, failures; and on the timed backend,
G2P processes, the h200-batched profile and `busy` through the container."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from reference_container.synthesizers.model_loop import ModelLoop, Request, plan_batch, set_thread_deadline
from reference_container.synthesizers.timed import TimedSynthesizer
from reference_container.synthesizers.timed_profile import load_profile, parse_profile


def _request(name: str, tokens: int, deadline: float, enqueued_at: float = 0.0) -> Request[str]:
    return Request(name, tokens, deadline, enqueued_at, Future())


def _plan(queue: list[Request[str]], now: float = 10.0, **bounds: Any) -> list[str] | float:
    settings: dict[str, Any] = {"batch_max": 8, "window_s": 0.005, "max_pad_ratio": 1.5, "token_budget": None,
                                "horizon_s": None}
    planned = plan_batch(queue, now, **{**settings, **bounds})
    return planned if isinstance(planned, float) else [r.payload for r in planned]


def test_earliest_deadline_first_and_a_first_unit_before_later_ones() -> None:
    # a first unit (due at once: its listener hears nothing yet) overtakes units whose listeners hold audio
    queue = [_request("later", 40, deadline=12.0), _request("first", 40, deadline=9.0),
             _request("soon", 40, deadline=10.5)]
    assert _plan(queue, batch_max=1) == ["first"]
    assert _plan(queue, batch_max=2) == ["first", "soon"]


def test_similar_lengths_together_and_the_rest_wait() -> None:
    queue = [_request("a", 40, 1.0), _request("long", 121, 2.0), _request("b", 50, 3.0), _request("c", 61, 4.0)]
    assert _plan(queue) == ["a", "b"]  # 121 and 61 are more than 1.5x 40
    assert _plan([r for r in queue if r.payload in ("long", "c")], max_pad_ratio=3.0) == ["long", "c"]


def test_batch_size_and_token_budget_bound_a_pass() -> None:
    queue = [_request(str(i), 50, float(i)) for i in range(10)]
    assert _plan(queue, batch_max=4) == ["0", "1", "2", "3"]
    assert _plan(queue, token_budget=150) == ["0", "1", "2"]  # 3 x 50 padded tokens


def test_no_pass_before_its_window_unless_full_and_never_after() -> None:
    queue = [_request("a", 40, 0.0, enqueued_at=10.0)]
    wait = _plan(queue, now=10.001, window_s=0.005)
    assert isinstance(wait, float) and wait == pytest.approx(0.004)
    assert _plan(queue, now=10.005, window_s=0.005) == ["a"]
    full = [_request(str(i), 40, 0.0, enqueued_at=10.0) for i in range(2)]
    assert _plan(full, now=10.0, batch_max=2, window_s=30.0) == ["0", "1"]


def test_units_whose_listeners_hold_audio_wait_and_gather() -> None:
    later = [_request("a", 40, deadline=12.0), _request("b", 40, deadline=12.2)]
    wait = _plan(later, now=10.0, horizon_s=0.3)
    assert isinstance(wait, float) and wait == pytest.approx(1.7)  # due at 12.0, started 0.3 s ahead
    assert _plan(later, now=11.75, horizon_s=0.3) == ["a", "b"]
    first = [*later, _request("first", 40, deadline=9.0)]  # a first unit is due at once: the others ride along
    assert _plan(first, now=10.0, horizon_s=0.3) == ["first", "a", "b"]


def test_the_loop_runs_passes_within_the_window_and_hands_results_back() -> None:
    seen: list[list[int]] = []

    def forward(batch: list[int]) -> list[int]:
        seen.append(list(batch))
        return [x * 10 for x in batch]

    loop: ModelLoop[int] = ModelLoop(forward, batch_max=2, window_s=30.0)  # a full batch leaves at once
    try:
        started = time.perf_counter()
        futures = [loop.submit(i, 40) for i in (1, 2)]
        assert [f.result(timeout=5) for f in futures] == [10, 20]
        assert time.perf_counter() - started < 5 and seen == [[1, 2]]
    finally:
        loop.close()
    lone: ModelLoop[int] = ModelLoop(forward, batch_max=8, window_s=0.2)
    try:
        started = time.perf_counter()
        assert lone(7, 40) == 70
        waited = time.perf_counter() - started
        assert 0.19 <= waited < 2.0  # waited for company, but not past its window
        assert lone.passes[-1].size == 1
    finally:
        lone.close()


def test_a_failed_pass_reaches_every_caller_and_close_fails_what_is_queued() -> None:
    def broken(batch: list[int]) -> list[int]:
        raise RuntimeError("device lost")

    loop: ModelLoop[int] = ModelLoop(broken, batch_max=2, window_s=30.0)
    futures = [loop.submit(i, 40) for i in (1, 2)]
    for future in futures:
        with pytest.raises(RuntimeError, match="device lost"):
            future.result(timeout=5)
    queued = loop.submit(3, 40)
    loop.close()
    with pytest.raises(RuntimeError, match="closed"):
        queued.result(timeout=5)
    with pytest.raises(RuntimeError, match="closed"):
        loop.submit(4, 40)


# -- the timed backend: what a GPU deployment runs -----------------------------------------------------


def test_timed_backend_orders_its_units_by_the_schedulers_deadline() -> None:
    """The scheduler's deadline rides on the worker thread into the loop: a later-due unit waits."""
    profile = parse_profile({"tokens_per_char": 1.0, "g2p_fixed_ms": 0.0, "g2p_per_char_ms": 0.0,
                             "call_fixed_ms": 150.0, "call_per_token_ms": 0.0, "audio_s_per_token": 0.05}, "t")
    synth = TimedSynthesizer(profile, workers=4, batch_window_ms=60, batch_max=1)
    synth.load()
    assert synth.loop is not None
    done: list[str] = []

    def speak(name: str, deadline: float) -> None:
        set_thread_deadline(deadline)
        list(synth.synthesize("hello", "af_heart", 1.0))
        done.append(name)

    now = time.perf_counter()
    threads = [threading.Thread(target=speak, args=(name, now + offset))
               for name, offset in (("running", -9.0), ("late", 1.0), ("due", -1.0), ("soon", 0.5))]
    for thread in threads:
        thread.start()
        time.sleep(0.02)  # the first one's pass (150 ms) runs while the others queue
    for thread in threads:
        thread.join(timeout=10)
    assert done == ["running", "due", "soon", "late"]


def test_timed_g2p_processes_bound_how_many_g2p_runs_overlap() -> None:
    base = {"tokens_per_char": 1.0, "g2p_fixed_ms": 200.0, "g2p_per_char_ms": 0.0, "call_fixed_ms": 1.0,
            "call_per_token_ms": 0.0, "audio_s_per_token": 0.05}

    def four_at_once(processes: int) -> float:
        synth = TimedSynthesizer(parse_profile(base, "t"), workers=4, batch_window_ms=1, g2p_processes=processes)
        synth.load()
        threads = [threading.Thread(target=lambda: list(synth.synthesize("hi", "af_heart", 1.0)))
                   for _ in range(4)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        return time.perf_counter() - started

    assert four_at_once(2) >= 0.39  # two waves of two
    assert four_at_once(0) < 0.35  # G2P in each worker's thread: all four at once


def test_h200_batched_profile_costs_padding_as_measured() -> None:
    p = load_profile("h200-batched")
    assert "ceiling_results.json" in p.source and "mixed_lengths_results.json" in p.source
    sorted_pass = p.batch_s([58] * 64)
    padded_pass = p.batch_s([12] * 63 + [121])  # one long unit pads the batch
    assert padded_pass > 1.5 * sorted_pass
    audio_per_s = 256 * p.audio_s(58, 1.0) / p.batch_s([58] * 256)
    assert 950 <= audio_per_s <= 1200  # the measured ceiling: 987-1061 (tf32, B=256)


def test_busy_when_full_through_the_serving_loop() -> None:
    """The container on the timed backend with the serving loop answers `busy` past --max-queue."""
    import json

    from tests.container.timed_server import timed_container

    async def three_at_once(url: str) -> list[str]:
        import websockets

        async def one(i: int) -> str:
            async with websockets.connect(url.replace("http", "ws") + "/invocations-bidirectional-stream") as ws:
                await ws.send(json.dumps({"text": "A sentence long enough to keep the model busy for a while. " * 3,
                                          "request_id": str(i)}))
                while True:
                    frame = await asyncio.wait_for(ws.recv(), 30)
                    if isinstance(frame, str):
                        kind = json.loads(frame)
                        if kind["type"] in ("synthesis_complete", "error"):
                            return kind.get("code", kind["type"])

        return list(await asyncio.gather(*(one(i) for i in range(3))))

    with timed_container("h200-batched", "--batch-window-ms", "5", "--synth-workers", "4",
                         "--max-queue", "2") as url:
        outcomes = asyncio.run(three_at_once(url))
    assert sorted(outcomes) == ["busy", "synthesis_complete", "synthesis_complete"]
