"""The two loops of a ladder rung: closed (N clients back to back) and open (Poisson arrivals on a schedule).

Both drive *jobs*: a job is what one client does once (one request, or one whole session) and fills
the :class:`~bidi_tts_loadtest.ladder.rung.Sample` it is handed (its own ``sent_at`` at the moment
it sends). Each client thread makes its own job runner (its own connection), so no client waits on
another's socket. The loops only keep time and collect; :mod:`.rung` judges.

- closed: N threads; each sends its next job the moment the last one returned, until the hold ends.
  The time between a job's result and the next send is recorded (``gap_s``): a client that spends
  long there is the limit, not the target.
- open: arrivals are drawn up front (exponential gaps at the rate, seeded); a pool of at most
  ``max_in_flight`` client threads takes them in order and sleeps until each one's scheduled time,
  so when every client is busy an arrival waits and its *lag* (send minus schedule) shows it.

After the hold, in-flight jobs get ``drain_s`` to finish (not measured: their samples were sent in
the window and are judged there; still open after the drain, they are *unfinished* and the rung
misses the SLO).
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from bidi_tts_loadtest.ladder.rung import Collected, Sample


class Job(Protocol):
    """One client's runner: ``job(item, span, collected)`` does the work once and fills ``span`` (the loop
    has put it in ``collected.spans``); it adds what it measured to ``collected.samples`` (a request job:
    the span itself; a session job: one sample per turn)."""

    def __call__(self, item: str, span: Sample, collected: Collected, /) -> None: ...

    def close(self) -> None: ...


JobFactory = Callable[[], Job]


def _join(threads: list[threading.Thread], until: float) -> None:
    for thread in threads:
        thread.join(timeout=max(0.0, until - time.perf_counter()))


def closed_loop(make_job: JobFactory, clients: int, items: Sequence[str], *, hold_s: float, measure_s: float,
                drain_s: float) -> Collected:
    """`clients` clients, each with one job in flight, zero think time, for `hold_s` seconds."""
    started = time.perf_counter()
    collected = Collected("closed", clients, started, started + hold_s, measure_s, started)

    def client(index: int) -> None:
        job = make_job()
        k = index * 7  # clients start at different texts
        last_result: float | None = None
        try:
            while time.perf_counter() < collected.stop_at:
                sample = Sample(sent_at=time.perf_counter())
                collected.spans.append(sample)
                job(items[k % len(items)], sample, collected)
                k += 1
                if last_result is not None:
                    sample.gap_s = max(0.0, sample.sent_at - last_result)
                # What the client does between here and the next send is its own overhead.
                last_result = sample.done_at if sample.done_at is not None else time.perf_counter()
        finally:
            job.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    _join(threads, collected.stop_at + drain_s)
    collected.ended_at = time.perf_counter()
    return collected


def poisson_schedule(rate: float, hold_s: float, rng: random.Random) -> list[float]:
    """Arrival offsets in [0, hold_s): exponential gaps of mean 1/rate."""
    out: list[float] = []
    at = rng.expovariate(rate)
    while at < hold_s:
        out.append(at)
        at += rng.expovariate(rate)
    return out


def open_loop(make_job: JobFactory, rate: float, items: Sequence[str], *, hold_s: float, measure_s: float,
              drain_s: float, seed: int, max_in_flight: int) -> Collected:
    """Poisson arrivals at `rate` per second for `hold_s` seconds, at most `max_in_flight` at once."""
    schedule = poisson_schedule(rate, hold_s, random.Random(seed))
    started = time.perf_counter()
    collected = Collected("open", rate, started, started + hold_s, measure_s, started)
    arrivals: queue.Queue[tuple[int, float]] = queue.Queue()
    for i, offset in enumerate(schedule):
        arrivals.put((i, started + offset))
    give_up_at = collected.stop_at + drain_s
    window_start, window_end = collected.window
    collected.scheduled = sum(1 for offset in schedule if window_start <= started + offset < window_end)

    def client() -> None:
        job: Job | None = None
        try:
            while time.perf_counter() < give_up_at:
                try:
                    i, due = arrivals.get_nowait()
                except queue.Empty:
                    return
                time.sleep(max(0.0, due - time.perf_counter()))
                if time.perf_counter() >= give_up_at:
                    arrivals.put((i, due))  # counted as never sent below
                    return
                job = job or make_job()
                sample = Sample(sent_at=time.perf_counter(), scheduled_at=due)
                collected.spans.append(sample)
                job(items[i % len(items)], sample, collected)
        finally:
            if job is not None:
                job.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(min(max_in_flight, len(schedule)))]
    for thread in threads:
        thread.start()
    _join(threads, give_up_at)
    while True:
        try:
            _, due = arrivals.get_nowait()
        except queue.Empty:
            break
        collected.unsent += window_start <= due < window_end
    collected.ended_at = time.perf_counter()
    return collected
