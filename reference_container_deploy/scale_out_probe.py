"""The small load `scale-out-time` holds while it adds an instance: a few sessions, one message at a time.

Each session opens a stream (by default `InvokeEndpointWithBidirectionalStream` through
:class:`bidi_tts.transports.sagemaker.SageMakerTransport`, the load test's transport), sends one
synthesize message, records the time to its first audio frame, waits for `synthesis_complete`, pauses,
and sends the next; a failure is recorded and the session reopens. It runs on its own event loop in a
background thread so the measurement loop can poll AWS synchronously beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bidi_tts.frames import FrameClass
from bidi_tts.transports.base import Transport
from reference_container_deploy.scale_out import ProbeSample

Opener = Callable[[], Awaitable[Transport]]
DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog. It barely notices."


@dataclass(frozen=True, slots=True)
class ProbeSettings:
    sessions: int = 2
    text: str = DEFAULT_TEXT
    pause_s: float = 1.0  # between messages of one session
    message_timeout_s: float = 30.0  # no frame for this long: the message failed


class SessionProbe:
    """Start with :meth:`start`, read :attr:`samples`, end with :meth:`stop` (idempotent)."""

    def __init__(self, opener: Opener, settings: ProbeSettings = ProbeSettings(),
                 clock: Callable[[], float] = time.time) -> None:
        self._open = opener
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: list[ProbeSample] = []
        self._loop = asyncio.new_event_loop()
        self._stopping: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="scale-out-probe", daemon=True)

    @property
    def samples(self) -> list[ProbeSample]:
        with self._lock:
            return list(self._samples)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        if self._thread.is_alive() and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(timeout=timeout_s)

    def _record(self, at: float, first_audio_ms: float | None) -> None:
        with self._lock:
            self._samples.append(ProbeSample(at=at, first_audio_ms=first_audio_ms))

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        tasks = [asyncio.create_task(self._session(i)) for i in range(self._settings.sessions)]
        await self._stopping.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _session(self, index: int) -> None:
        assert self._stopping is not None
        number = 0
        while not self._stopping.is_set():
            transport: Transport | None = None
            try:
                transport = await self._open()
                while not self._stopping.is_set():
                    number += 1
                    await self._one_message(transport, f"probe-{index}-{number}")
                    await asyncio.sleep(self._settings.pause_s)
            except asyncio.CancelledError:
                raise
            except Exception:
                self._record(self._clock(), None)
                await asyncio.sleep(self._settings.pause_s)
            finally:
                if transport is not None:
                    with contextlib.suppress(Exception):
                        await transport.close()

    async def _one_message(self, transport: Transport, request_id: str) -> None:
        sent = time.perf_counter()
        await transport.send(json.dumps({"text": self._settings.text, "request_id": request_id}))
        first_ms: float | None = None
        while True:
            frame = await transport.receive(timeout=self._settings.message_timeout_s)
            kind, control = frame.classify()
            if kind is FrameClass.AUDIO and first_ms is None:
                first_ms = (time.perf_counter() - sent) * 1000.0
                at = self._clock()
            elif control is not None and control.get("type") == "error":
                raise RuntimeError(f"error frame: {control.get('code')}")
            elif control is not None and control.get("type") == "synthesis_complete":
                if first_ms is None:
                    raise RuntimeError("synthesis_complete without audio")
                self._record(at, first_ms)
                return


def sagemaker_opener(endpoint: str, region: str, endpoint_url: str | None, ca_file: str | None) -> Opener:
    """Open streams to a SageMaker endpoint (or the local stand-in at `endpoint_url`)."""
    from bidi_tts.transports.sagemaker import SageMakerTarget, SageMakerTransport

    target = SageMakerTarget(endpoint, region=region, endpoint_url=endpoint_url, ca_file=ca_file)

    async def open_stream() -> Transport:
        return await SageMakerTransport.open(target)

    return open_stream
