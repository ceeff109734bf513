"""Fair, bounded, cancellable scheduling of synthesis jobs onto the model.

Design (one queue, not one lock): the model runs at most `workers` syntheses at a time (1 per
device by default: two concurrent Kokoro calls on one device only slow each other down). A *job*
is one synthesis unit: a sentence or a first clause (:mod:`.segments`), not a whole message. Each
session has its own FIFO of jobs; workers take jobs round-robin across sessions, so a session with
a long message gets one sentence, then every other waiting session gets one, and so on: a long
message cannot starve a short one. A plain lock would serve whole messages first come, first
served and let one 5,000-character message hold everyone for minutes.

Bounded: :meth:`Scheduler.admit` counts messages admitted and not finished across sessions; past
`max_messages` it raises :class:`Busy` at once (the session answers with a `busy` error frame,
never a hang). Off the loop: jobs run in a thread pool; chunks come back through an asyncio
queue, so pings and other sessions stay responsive. Cancellable: :meth:`Scheduler.cancel_session`
drops a session's queued jobs and flags its running job, which stops between model calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger(__name__)

SynthFn = Callable[[str, str, float], Iterator[np.ndarray]]


class Busy(Exception):
    """The scheduler holds as many messages as it may; the caller should answer `busy`."""


class JobCancelled(Exception):
    """The job was cancelled before it finished."""


class JobFailed(Exception):
    """The synthesizer raised; the cause is logged server-side, never sent to a peer."""


_DONE = object()


@dataclass(eq=False)
class Job:
    """One synthesis unit of one session, with its timings."""

    session_id: str
    text: str
    voice: str
    speed: float
    out: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    cancel_flag: threading.Event = field(default_factory=threading.Event)
    enqueued_at: float = field(default_factory=time.perf_counter)
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def queue_wait_s(self) -> float | None:
        return None if self.started_at is None else self.started_at - self.enqueued_at

    @property
    def synth_s(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return self.finished_at - self.started_at


class Ticket:
    """An admitted message; release it (or use it as a context manager) when the message ends."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._scheduler._active_messages -= 1

    def __enter__(self) -> Ticket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Scheduler:
    """Round-robin job scheduler over `workers` model slots; see the module docstring."""

    def __init__(self, synth: SynthFn, *, workers: int = 1, max_messages: int = 64) -> None:
        self._synth = synth
        self.workers = workers
        self.max_messages = max_messages
        self._active_messages = 0
        self._queues: OrderedDict[str, deque[Job]] = OrderedDict()
        self._running: dict[str, set[Job]] = {}
        self._wakeup: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the workers on the running loop."""
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="synth")
        self._tasks = [
            asyncio.create_task(self._worker(), name=f"synth-worker-{i}") for i in range(self.workers)
        ]

    async def stop(self) -> None:
        """Cancel every job and stop the workers."""
        for session_id in list(self._queues) + list(self._running):
            self.cancel_session(session_id)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    # -- API ------------------------------------------------------------------------------------
    @property
    def active_messages(self) -> int:
        return self._active_messages

    @property
    def queued_jobs(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def admit(self) -> Ticket:
        """Admit one message or raise :class:`Busy` when `max_messages` are already in."""
        if self._active_messages >= self.max_messages:
            raise Busy
        self._active_messages += 1
        return Ticket(self)

    def submit(self, session_id: str, text: str, voice: str, speed: float) -> Job:
        """Queue one unit for a session; read its audio with :meth:`stream`."""
        if self._wakeup is None:
            raise RuntimeError("scheduler not started")
        job = Job(session_id, text, voice, speed)
        self._queues.setdefault(session_id, deque()).append(job)
        self._wakeup.set()
        return job

    def cancel_session(self, session_id: str) -> int:
        """Drop the session's queued jobs and stop its running ones; returns how many were touched."""
        touched = 0
        for job in self._queues.pop(session_id, deque()):
            job.cancel_flag.set()
            job.out.put_nowait(JobCancelled())
            touched += 1
        for job in self._running.get(session_id, set()):
            job.cancel_flag.set()
            touched += 1
        return touched

    async def stream(self, job: Job) -> AsyncIterator[np.ndarray]:
        """The job's audio chunks as they are made; raises JobCancelled or JobFailed."""
        while True:
            item = await job.out.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]

    # -- internals ------------------------------------------------------------------------------
    def _next_job(self) -> Job | None:
        while self._queues:
            session_id, queue = next(iter(self._queues.items()))
            if not queue:
                del self._queues[session_id]
                continue
            job = queue.popleft()
            # Round-robin: this session goes to the back of the line.
            self._queues.move_to_end(session_id)
            if not queue:
                del self._queues[session_id]
            return job
        return None

    async def _worker(self) -> None:
        assert self._wakeup is not None and self._loop is not None
        while True:
            job = self._next_job()
            if job is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            self._running.setdefault(job.session_id, set()).add(job)
            try:
                await self._loop.run_in_executor(self._pool, self._run, job)
            finally:
                running = self._running.get(job.session_id)
                if running is not None:
                    running.discard(job)
                    if not running:
                        del self._running[job.session_id]

    def _run(self, job: Job) -> None:
        """Runs in a pool thread: synthesize, hand chunks to the loop, stop between chunks on cancel."""
        assert self._loop is not None
        put = job.out.put_nowait
        job.started_at = time.perf_counter()
        result: object = _DONE
        try:
            if job.cancel_flag.is_set():
                result = JobCancelled()
                return
            chunks = self._synth(job.text, job.voice, job.speed)
            try:
                for chunk in chunks:
                    if job.cancel_flag.is_set():
                        result = JobCancelled()
                        return
                    self._loop.call_soon_threadsafe(put, chunk)
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
            if job.cancel_flag.is_set():
                result = JobCancelled()
        except Exception:
            log.exception("event=synthesis_failed session=%s chars=%d", job.session_id, len(job.text))
            result = JobFailed()
        finally:
            job.finished_at = time.perf_counter()
            self._loop.call_soon_threadsafe(put, result)
