"""One loop that owns the model and feeds it batches continuously (the GPU serving loop).

Callers (the scheduler's worker threads, one per unit being made) hand in *requests*: one model
call's input with its token count and its playback deadline. One thread takes them in batches and
runs the batched forward (:func:`.kokoro_batched.forward_batch`, or the timed backend's wait):

- **Order**: the earliest deadline first. A message's first unit is due at once (its listener hears
  nothing yet), so it goes before units whose listeners still hold seconds of audio.
- **Similar lengths together**: the batch is padded to its longest unit, so a request joins only
  while the batch's longest is at most `max_pad_ratio` times its shortest; the others wait for a
  later pass, which they reach by their own deadlines.
- **Bounded wait**: a pass leaves as soon as `batch_max` requests are queued, or the oldest queued
  request has waited `window_s`; never later. While a pass runs, requests gather for the next.
- **Work that can wait, waits**: no pass starts while the most urgent request is due more than
  `horizon_s` from now (its listener still holds that much audio beyond the scheduler's margin).
  Such units gather into fuller passes later, and the device stays free for a first unit, which
  would otherwise wait behind a pass of units nobody needs yet. ``horizon_s=None``: every request
  is served as soon as the window allows.
- **Bounded size**: at most `batch_max` requests and `token_budget` padded tokens (batch size times
  the longest unit: activation memory grows with it).

Like vLLM's engine loop (one step loop owns the device) with Triton's dynamic-batcher bounds (a
preferred size, a queue delay). The loop records each pass (size, tokens, padding, duration) in
:attr:`ModelLoop.passes` for benchmarks and the container's statistics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

_this_thread = threading.local()


def set_thread_deadline(deadline: float | None) -> None:
    """The playback deadline of the unit this thread synthesizes now (the scheduler sets it, so the
    synthesizer's model calls carry it to the loop without a change of the synthesizer seam)."""
    _this_thread.deadline = deadline


def thread_deadline() -> float | None:
    return getattr(_this_thread, "deadline", None)


@dataclass(eq=False)
class Request[P]:
    payload: P
    tokens: int
    deadline: float
    enqueued_at: float
    result: Future[Any] = field(default_factory=Future)


@dataclass(frozen=True, slots=True)
class Pass:
    size: int
    longest: int
    tokens: int  # sum of the requests' own tokens
    started_at: float
    seconds: float

    @property
    def padding(self) -> float:
        """Share of the padded tokens that were padding."""
        return 1 - self.tokens / (self.size * self.longest)


class ModelLoop[P]:
    """See the module docstring. `forward(payloads) -> results` runs one pass, a result per payload."""

    def __init__(self, forward: Callable[[list[P]], Sequence[Any]], *, batch_max: int, window_s: float,
                 max_pad_ratio: float = 1.5, token_budget: int | None = None, horizon_s: float | None = 0.3,
                 clock: Callable[[], float] = time.perf_counter, name: str = "model-loop") -> None:
        if batch_max < 1 or window_s < 0 or max_pad_ratio < 1:
            raise ValueError("batch_max must be >= 1, window_s >= 0 and max_pad_ratio >= 1")
        self._forward = forward
        self.batch_max = batch_max
        self.window_s = window_s
        self.max_pad_ratio = max_pad_ratio
        self.token_budget = token_budget
        self.horizon_s = horizon_s
        self._clock = clock
        self._queue: list[Request[P]] = []
        self._cond = threading.Condition()
        self._closed = False
        self.passes: list[Pass] = []
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # -- callers ----------------------------------------------------------------------------
    def submit(self, payload: P, tokens: int, deadline: float | None = None) -> Future[Any]:
        """Queue one model call; its future holds the result (or the pass's exception)."""
        now = self._clock()
        request = Request(payload, max(1, int(tokens)), now if deadline is None else deadline, now)
        with self._cond:
            if self._closed:
                raise RuntimeError("the model loop is closed")
            self._queue.append(request)
            self._cond.notify_all()
        return request.result

    def __call__(self, payload: P, tokens: int, deadline: float | None = None) -> Any:
        return self.submit(payload, tokens, deadline).result()

    @property
    def queued(self) -> int:
        return len(self._queue)

    def close(self) -> None:
        """Stop taking requests; queued ones fail with RuntimeError."""
        with self._cond:
            self._closed = True
            dropped, self._queue = self._queue, []
            self._cond.notify_all()
        for request in dropped:
            request.result.set_exception(RuntimeError("the model loop was closed"))

    # -- the loop ---------------------------------------------------------------------------
    def next_batch(self, now: float) -> list[Request[P]] | float:
        """The batch to run at `now` (taken off the queue), or how long to wait first (lock held)."""
        planned = plan_batch(self._queue, now, batch_max=self.batch_max, window_s=self.window_s,
                             max_pad_ratio=self.max_pad_ratio, token_budget=self.token_budget,
                             horizon_s=self.horizon_s)
        if isinstance(planned, float):
            return planned
        taken = set(map(id, planned))
        self._queue = [r for r in self._queue if id(r) not in taken]
        return planned

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    if not self._queue:
                        self._cond.wait()
                        continue
                    batch = self.next_batch(self._clock())
                    if isinstance(batch, list):
                        break
                    self._cond.wait(batch)
            started = self._clock()
            try:
                results = self._forward([r.payload for r in batch])
            except Exception as exc:  # every caller of the pass sees it; the scheduler logs it
                for request in batch:
                    request.result.set_exception(exc)
                continue
            finally:
                self.passes.append(Pass(len(batch), max(r.tokens for r in batch), sum(r.tokens for r in batch),
                                        started, self._clock() - started))
            for request, result in zip(batch, results, strict=True):
                request.result.set_result(result)


def plan_batch[P](queue: Sequence[Request[P]], now: float, *, batch_max: int, window_s: float,
                  max_pad_ratio: float, token_budget: int | None,
                  horizon_s: float | None = None) -> list[Request[P]] | float:
    """The next pass's requests, or the seconds to wait before one is due (see the module docstring).

    Due: the most urgent request is due within `horizon_s`, and `batch_max` requests are queued or
    the oldest has waited `window_s`. Then the earliest
    deadline anchors the batch, and the others join in deadline order while the batch's longest stays
    within `max_pad_ratio` of its shortest and `token_budget` (size x longest) holds.
    """
    if horizon_s is not None:
        urgent = min(r.deadline for r in queue)
        if urgent - horizon_s > now:
            return urgent - horizon_s - now
    oldest = min(r.enqueued_at for r in queue)
    due_in = oldest + window_s - now
    if len(queue) < batch_max and due_in > 0:
        return due_in
    by_deadline = sorted(queue, key=lambda r: (r.deadline, r.enqueued_at))
    batch = [by_deadline[0]]
    low = high = batch[0].tokens
    for request in by_deadline[1:]:
        if len(batch) == batch_max:
            break
        lo, hi = min(low, request.tokens), max(high, request.tokens)
        if hi > max_pad_ratio * lo:
            continue
        if token_budget is not None and (len(batch) + 1) * hi > token_budget:
            continue
        batch.append(request)
        low, high = lo, hi
    return batch
