"""Bounded, cancellable scheduling of synthesis jobs onto the model, in deadline order by default.

Design (one queue, not one lock): the model runs at most `workers` syntheses at a time (1 per
device by default: two concurrent Kokoro calls on one device only slow each other down). A *job*
is one synthesis unit: a sentence or a first clause (:mod:`.segments`), not a whole message. Each
session has its own FIFO of jobs; which session's next job a free worker takes is the policy's
choice (:mod:`.policies`): earliest playback deadline first by default, so a new message's first
clause overtakes sentences whose listeners still hold seconds of unplayed audio; round-robin and
fifo stay selectable for comparison. A plain lock would serve whole messages first come, first
served and let one 5,000-character message hold everyone for minutes.

Bounded: :meth:`Scheduler.admit` counts messages admitted and not finished across sessions; past
`max_messages` it raises :class:`Busy` at once (the session answers with a `busy` error frame,
never a hang). Off the loop: jobs run in a thread pool; chunks come back through an asyncio
queue, so pings and other sessions stay responsive. Cancellable: :meth:`Scheduler.cancel_session`
drops a session's queued jobs and flags its running job, which stops between model calls.

One playback clock per session: when the audio already sent to its listener runs out, if the
listener plays it at real time from its first frame. The message streamer reports every frame it
sends (:meth:`Scheduler.sent`, after the cuts of the model's padding); a reader that reports nothing
is counted with the audio as it is handed out. The deadline policy and the units' plan
(:meth:`Scheduler.lead_s`) read this one clock.

Observable: :attr:`Scheduler.stats` counts the picks where the order could matter (more than one
session waiting) and those where the policy chose otherwise than round-robin would have, with the
queue depth (:class:`~reference_container.policies.PickStats`). With `stats_path` (the container
sets it from the environment variable ``SCHEDULER_STATS_FILE``) the counts are also written there as
JSON, for ``loadtest.capacity``, by a writer thread (:mod:`.scheduler_stats`): a file write can stall
for hundreds of milliseconds, and on the loop it would stall every session.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from reference_container.logs import kv
from reference_container.policies import PickStats, PlaybackEstimate, Policy, SessionQueues, pick, unit_deadline
from reference_container.scheduler_stats import StatsWriter
from reference_container.synthesizers.model_loop import set_thread_deadline

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
    seq: int = 0
    audio_estimate_s: float = 0.0
    audio_s: float = 0.0  # handed out so far
    reader_reports_sent: bool = False  # the reader calls Scheduler.sent for what reaches the listener
    out: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    cancel_flag: threading.Event = field(default_factory=threading.Event)
    enqueued_at: float = field(default_factory=time.perf_counter)
    started_at: float | None = None
    finished_at: float | None = None
    deadline: float | None = None  # the policy's deadline when the job was picked (the model loop's order)

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
    """Job scheduler over `workers` model slots; see the module docstring."""

    def __init__(
        self,
        synth: SynthFn,
        *,
        workers: int = 1,
        max_messages: int = 64,
        policy: Policy | str = Policy.DEADLINE,
        sample_rate: int = 24_000,
        deadline_margin_s: float = 0.5,
        clock: Callable[[], float] = time.perf_counter,
        stats_path: str | None = None,
    ) -> None:
        self._synth = synth
        self.workers = workers
        self.max_messages = max_messages
        self.policy = Policy(policy)
        self.sample_rate = sample_rate
        self.deadline_margin_s = deadline_margin_s
        self.estimate = PlaybackEstimate()
        self._clock = clock
        self.stats = PickStats()
        self.audio_made_s = 0.0  # audio synthesized, all jobs (for the benchmark's capacity figures)
        self.synth_busy_s = 0.0  # worker-seconds spent synthesizing
        self._stats_path = stats_path
        self._stats_writer = StatsWriter(stats_path) if stats_path is not None else None
        self._stats_written_at = -float("inf")
        self._seq = itertools.count()
        self._active_messages = 0
        self._queues = SessionQueues()
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
        for session_id in list(self._queues.queues) + list(self._running):
            self.cancel_session(session_id)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._stats_path is not None:
            self._write_stats(self._clock(), force=True)
        if self._stats_writer is not None:
            await asyncio.to_thread(self._stats_writer.close)

    # -- API ------------------------------------------------------------------------------------
    @property
    def active_messages(self) -> int:
        return self._active_messages

    @property
    def queued_jobs(self) -> int:
        return len(self._queues)

    def admit(self) -> Ticket:
        """Admit one message or raise :class:`Busy` when `max_messages` are already in."""
        if self._active_messages >= self.max_messages:
            raise Busy
        self._active_messages += 1
        return Ticket(self)

    def lead_s(self, session_id: str) -> float:
        """Seconds of the session's audio that reached its listener and are not yet played (by a
        player that started at its first frame, plays at real time and resumes at the next frame
        when it runs dry): what the listener can hear while the next unit is made."""
        end = self._queues.playback_end.get(session_id)
        return 0.0 if end is None else max(0.0, end - self._clock())

    def sent(self, session_id: str, seconds: float) -> None:
        """`seconds` of the session's audio reached its listener: the one playback clock, read by the
        deadline policy and by the units' plan (:meth:`lead_s`)."""
        self._queues.played(session_id, self._clock(), seconds)

    def submit(self, session_id: str, text: str, voice: str, speed: float, *,
               reader_reports_sent: bool = False) -> Job:
        """Queue one unit for a session; read its audio with :meth:`stream`. The session's playback
        clock advances with the audio as it is handed out, unless `reader_reports_sent`: then the
        reader reports what reaches the listener (after its cuts of the model's padding) with
        :meth:`sent`."""
        if self._wakeup is None:
            raise RuntimeError("scheduler not started")
        job = Job(session_id, text, voice, speed, seq=next(self._seq), enqueued_at=self._clock(),
                  audio_estimate_s=self.estimate.audio_estimate_s(text, speed),
                  reader_reports_sent=reader_reports_sent)
        self._queues.push(job)
        self._wakeup.set()
        return job

    def cancel_session(self, session_id: str) -> int:
        """Drop the session's queued jobs and stop its running ones; returns how many were touched."""
        touched = 0
        for job in cast(list[Job], self._queues.drop(session_id)):
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
    def deadline(self, job: Job, now: float | None = None) -> float:
        """When `job` should start (a clock() value) under the deadline policy, judged at `now`."""
        return unit_deadline(
            job,
            playback_end=self._queues.playback_end.get(job.session_id, float("-inf")),
            ahead=self._running.get(job.session_id, ()),
            estimate=self.estimate,
            margin_s=self.deadline_margin_s,
            last_audio_at=self._queues.last_audio_at.get(job.session_id, float("-inf")),
            now=self._clock() if now is None else now,
        )

    def _next_job(self) -> Job | None:
        now = self._clock()
        self._queues.forget_finished(now, self._running)
        job = pick(self.policy, self._queues, lambda u: self.deadline(u, now),  # type: ignore[arg-type]
                   self.stats)
        if job is not None and self._stats_path is not None:
            self._write_stats(now, force=False)
        return job  # type: ignore[return-value]

    def _write_stats(self, now: float, *, force: bool) -> None:
        """Benchmark hook: the counts as JSON in `stats_path`, at most twice a second and whenever the
        last running job ends with nothing queued, replaced atomically (a reader never sees half), by
        a writer thread: the loop only takes the snapshot (:mod:`.scheduler_stats`: a write can stall)."""
        if not force and now - self._stats_written_at < 0.5:
            return
        self._stats_written_at = now
        writer = self._stats_writer
        if writer is None or writer.failed:
            self._stats_path = None
            return
        writer.submit({"policy": self.policy.value, "workers": self.workers, **self.stats.as_dict(),
                       "audio_s": self.audio_made_s, "synth_s": self.synth_busy_s})

    def _deliver(self, job: Job, chunk: np.ndarray) -> None:
        """On the loop: hand a chunk to the job's reader and, unless the reader reports what it sends,
        advance its session's playback clock."""
        if not job.cancel_flag.is_set():
            seconds = len(chunk) / self.sample_rate
            job.audio_s += seconds
            if not job.reader_reports_sent:
                self._queues.played(job.session_id, self._clock(), seconds)
        job.out.put_nowait(chunk)

    def _finish(self, job: Job, result: object) -> None:
        if log.isEnabledFor(logging.DEBUG):  # one line per unit, for explaining queues (--log-level debug)
            log.debug(kv(event="unit_done", session=job.session_id, seq=job.seq, chars=len(job.text),
                         queue_wait_s=job.queue_wait_s if job.queue_wait_s is not None else -1.0,
                         synth_s=job.synth_s if job.synth_s is not None else -1.0, audio_s=job.audio_s,
                         enqueued_at=job.enqueued_at, running=sum(map(len, self._running.values())),
                         queued=len(self._queues)))
        if job.synth_s is not None:
            self.synth_busy_s += job.synth_s
            self.audio_made_s += job.audio_s
        if job.synth_s is not None and not isinstance(result, BaseException):
            self.estimate.observe(len(job.text), job.speed, job.audio_s, job.synth_s)
        if self._stats_path is not None:  # the last job of a burst: write, so a reader sees it all
            idle = not self._queues.queues and sum(map(len, self._running.values())) <= 1
            self._write_stats(self._clock(), force=idle)
        job.out.put_nowait(result)

    async def _worker(self) -> None:
        assert self._wakeup is not None and self._loop is not None
        while True:
            job = self._next_job()
            if job is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            job.deadline = self.deadline(job)
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
        job.started_at = self._clock()
        result: object = _DONE
        set_thread_deadline(job.deadline)
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
                    self._loop.call_soon_threadsafe(self._deliver, job, chunk)
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
            set_thread_deadline(None)
            job.finished_at = self._clock()
            self._loop.call_soon_threadsafe(self._finish, job, result)
