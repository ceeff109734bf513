"""Drive an asyncio Transport (the SageMaker SDK on awscrt) from gevent greenlets.

Locust runs on gevent with the standard library monkey-patched; the SageMaker runtime SDK is
asyncio on awscrt. Running its coroutines on the gevent hub would block it, and running them on a
patched thread would hand asyncio gevent's selectors. So:

* one asyncio loop per process runs in a **native OS thread** (``_thread.start_new_thread`` from
  before patching) with the **original** ``selectors.DefaultSelector``;
* every session has a pump task in that loop that awaits ``transport.receive()`` and appends each
  frame to a deque. The transport stamps each frame with ``time.perf_counter()`` when it arrives,
  in the loop thread, so gevent's scheduling delay never enters the timings;
* the greenlet side waits on a ``gevent.event.Event`` that the loop thread sets (gevent's events
  are safe to set from another native thread: it wakes the hub through its thread-safe async
  watcher); sends go the other way through ``asyncio.run_coroutine_threadsafe`` and a
  ``gevent.event.AsyncResult``, and the send timestamp is taken in the loop thread right before
  the write.

Without gevent (plain scripts) the same class works with ordinary threads.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import logging
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from bidi_tts.deadline import Deadline
from bidi_tts.frames import FrameKind
from bidi_tts.transports.base import (
    Frame,
    SyncWaitClosed,
    Transport,
    TransportClosed,
    TransportError,
    TransportTimeout,
)

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _gevent_patched() -> bool:
    try:
        from gevent import monkey
    except ImportError:
        return False
    return bool(monkey.is_module_patched("socket"))


class _NativeThreadLoop(asyncio.SelectorEventLoop):
    """A selector loop whose default executor runs each job on a fresh native thread.

    Under gevent, the stock ThreadPoolExecutor (behind ``asyncio.to_thread`` and ``getaddrinfo``,
    which the SDK uses to read config files) builds its workers from the patched ``threading``;
    ``concurrent.futures`` then joins them at interpreter exit through gevent locks and the
    process hangs after "Shutting down". Jobs here are rare (one per stream at most), so a
    thread per job is cheap, and nothing is left for the exit hook to join.
    """

    def __init__(self, selector: Any, start_thread: Callable[..., Any]) -> None:
        super().__init__(selector)
        self._start_thread = start_thread

    def run_in_executor[T, *Ts](self, executor: Any, func: Callable[[*Ts], T], *args: *Ts) -> asyncio.Future[T]:
        if executor is not None:
            return super().run_in_executor(executor, func, *args)
        future: asyncio.Future[T] = self.create_future()

        def settle(result: Any, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        def job() -> None:
            try:
                result = func(*args)
            except BaseException as exc:  # handed to the awaiting coroutine, not lost
                self.call_soon_threadsafe(settle, None, exc)
            else:
                self.call_soon_threadsafe(settle, result, None)

        self._start_thread(job, ())
        return future


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's asyncio loop, running in a native thread (started on first use).

    At interpreter exit the loop is stopped, its leftover tasks cancelled and the loop closed,
    so nothing of it runs (or logs) while gevent and logging are being torn down.
    """
    global _loop
    with _lock:
        if _loop is None:
            if _gevent_patched():
                from gevent.monkey import get_original

                selector = get_original("selectors", "DefaultSelector")()
                start_thread = get_original("_thread", "start_new_thread")
                allocate_lock = get_original("_thread", "allocate_lock")
            else:
                import _thread
                import selectors

                selector = selectors.DefaultSelector()
                start_thread = _thread.start_new_thread
                allocate_lock = _thread.allocate_lock
            loop = _NativeThreadLoop(selector, start_thread)
            loop.set_exception_handler(_quiet_when_finalizing)
            finished = allocate_lock()
            finished.acquire()
            start_thread(_run_loop, (loop, finished))
            atexit.register(_stop_loop, loop, finished)
            _loop = loop
    return _loop


def _run_loop(loop: asyncio.AbstractEventLoop, finished: Any) -> None:
    try:
        loop.run_forever()
    finally:
        # Leftover tasks are not cancelled: cancelling awscrt's pending writes races its native
        # completion callbacks (which then print InvalidStateError). The process is exiting.
        finished.release()


def _stop_loop(loop: asyncio.AbstractEventLoop, finished: Any) -> None:
    if loop.is_running():
        loop.call_soon_threadsafe(loop.stop)
        finished.acquire(True, 5.0)


def _quiet_when_finalizing(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The default handler, except while the interpreter is finalizing (logging and gevent are
    half torn down then) and for awscrt's request-body writer failing after the response ended
    (an edge that answers an error before reading the request; nothing is lost)."""
    if sys.is_finalizing():
        return
    error = context.get("exception")
    if error is not None and "HTTP_STREAM_HAS_COMPLETED" in f"{getattr(error, 'name', '')} {error}":
        logging.getLogger(__name__).debug("awscrt: request body write after the response ended: %s", error)
        return
    loop.default_exception_handler(context)


class _Waiter:
    """A one-shot result settable from the loop thread, awaited by a greenlet or a thread."""

    def __init__(self) -> None:
        if _gevent_patched():
            import gevent.event

            self._gevent: Any = gevent.event.AsyncResult()
        else:
            self._gevent = None
            self._event = threading.Event()
            self._value: Any = None
            self._error: BaseException | None = None

    def settle(self, future: Any) -> None:
        error = future.exception()
        if self._gevent is not None:
            if error is not None:
                self._gevent.set_exception(error)
            else:
                self._gevent.set(future.result())
            return
        self._error, self._value = error, None if error else future.result()
        self._event.set()

    def wait(self, timeout: float | None) -> Any:
        if self._gevent is not None:
            import gevent

            try:
                return self._gevent.get(timeout=timeout)
            except gevent.Timeout:
                raise TransportTimeout(f"no answer from the loop thread within {timeout} s") from None
        if not self._event.wait(timeout):
            raise TransportTimeout(f"no answer from the loop thread within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._value


def call[T](coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run `coro` in the background loop; block only the calling greenlet/thread for its result."""
    waiter = _Waiter()
    future = asyncio.run_coroutine_threadsafe(coro, background_loop())
    future.add_done_callback(waiter.settle)
    try:
        result: T = waiter.wait(timeout)
    except TransportTimeout:
        future.cancel()
        raise
    return result


class _Signal:
    """Level-triggered wake-up from the loop thread to one waiting greenlet or thread."""

    def __init__(self) -> None:
        if _gevent_patched():
            import gevent.event

            self._event: Any = gevent.event.Event()
        else:
            self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def wait(self, timeout: float | None) -> bool:
        return bool(self._event.wait(timeout))


class BridgedTransport(SyncWaitClosed):
    """A blocking transport (see :class:`bidi_tts_loadtest.core.turn.SyncTransport`) over an async Transport."""

    knows_frame_kind = True

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self.knows_frame_kind = transport.knows_frame_kind
        self._frames: collections.deque[Frame] = collections.deque()
        self._end: TransportError | None = None
        self._signal = _Signal()
        self._pump_future = asyncio.run_coroutine_threadsafe(self._pump(), background_loop())

    @classmethod
    def open(cls, opener: Callable[[], Awaitable[Transport]], *, timeout: float = 30.0) -> BridgedTransport:
        """Open the async transport in the loop thread (e.g. ``lambda: SageMakerTransport.open(t)``)."""

        async def _open() -> Transport:
            return await opener()

        return cls(call(_open(), timeout))

    async def _pump(self) -> None:
        try:
            while True:
                frame = await self._transport.receive()  # stamped on arrival, in this thread
                self._frames.append(frame)
                self._signal.set()
        except TransportError as exc:
            self._end = exc
        except Exception:  # an SDK failure must still wake the greenlet, with a stable error
            self._end = TransportClosed(None, "transport failed", by_peer=False)
        finally:
            self._signal.set()

    def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> float:
        async def _send() -> float:
            at = time.perf_counter()
            await self._transport.send(payload, kind=kind)
            return at

        return call(_send(), timeout=30.0)

    def receive(self, timeout: float | None = None) -> Frame:
        deadline = Deadline(timeout)
        while True:
            if self._frames:
                return self._frames.popleft()
            if self._end is not None:
                raise self._end
            self._signal.clear()
            if self._frames or self._end is not None:  # arrived between the check and the clear
                continue
            left = None if timeout is None else deadline.remaining()  # None: Event.wait without a bound
            if left == 0.0 or not self._signal.wait(left):
                if self._frames or self._end is not None:
                    continue
                raise TransportTimeout(f"no frame within {timeout} s")

    @property
    def close_code(self) -> int | None:
        return self._transport.close_code

    def close(self, code: int = 1000, reason: str = "") -> None:
        call(self._transport.close(code, reason), timeout=30.0)
