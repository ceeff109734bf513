"""Targets: where the cases run. A case only sees ``connect()`` and ``base_url`` (and, for
``POST /invocations`` on an endpoint, :meth:`SageMakerEndpointTarget.post_invocations`).

Kinds: ``url`` (a running container), ``process`` (the reference container started as a local
process), ``docker`` (the reference image through testcontainers) and ``sagemaker`` (an endpoint,
through InvokeEndpointWithBidirectionalStream, and InvokeEndpointWithResponseStream for POST).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bidi_tts.dialects import Dialect
from bidi_tts.dialects.kokoro_sample import KokoroSampleDialect
from bidi_tts.local_container import LocalContainer
from bidi_tts.probe import ping_status, wait_for_ping
from bidi_tts.transports.base import Transport
from bidi_tts.transports.dialect import DialectTransport
from bidi_tts.transports.websocket import WebSocketTransport, websocket_url
from bidi_tts_conformance.failures import CaseSkipped
from bidi_tts_conformance.ping_log import PingLog

DEFAULT_IMAGE = "bidi-tts-reference:latest"
READY_TIMEOUT_S = 480.0  # SM-PING: a container must pass /ping within 8 minutes of start

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass
class Target:
    """A container to check. Subclasses add how to start and reach it."""

    kind: str = "url"
    base_url: str | None = None
    image: str | None = None  # set for docker targets: the label case inspects it
    description: str = ""
    # What /ping answered while the container loaded; set only by targets the suite starts itself.
    ping_log: PingLog | None = field(default=None, repr=False)
    # The wire protocol the sessions speak (--dialect): its route, and the translator every session gets.
    dialect: Dialect = field(default_factory=KokoroSampleDialect, repr=False)

    async def connect(self, **opts: Any) -> Transport:
        """Open one session in the target's dialect. Options: ``headers`` (WebSocket only),
        ``open_timeout``, ``wire`` (True: the dialect's own frames, untranslated)."""
        return self.speaking(await self._open(**opts), wire=bool(opts.get("wire")))

    def speaking(self, transport: Transport, *, wire: bool = False) -> Transport:
        """`transport` translated to the kokoro-sample conversation (unless `wire` or the identity)."""
        if wire or self.dialect.is_identity:
            return transport
        return DialectTransport(transport, self.dialect.translator())

    async def _open(self, **opts: Any) -> Transport:
        assert self.base_url is not None
        return await WebSocketTransport.open(
            websocket_url(self.base_url, self.dialect.ws_path),
            headers=opts.get("headers"),
            open_timeout=float(opts.get("open_timeout", 10.0)),
            # A client leaving mid-message need not wait out a container that streams on before it
            # answers the close frame: that wait would only slow the suite down.
            close_timeout=float(opts.get("close_timeout", 0.5)),
        )

    def start(self, progress: Progress = _quiet) -> None:
        """Bring the target up (no-op for a running URL)."""

    def stop(self) -> None:
        """Tear down whatever start() brought up."""

    @property
    def label(self) -> str:
        return self.description or f"{self.kind} {self.base_url or ''}".strip()


def wait_ready(base_url: str, timeout: float, progress: Progress, alive: Callable[[], bool],
               log: PingLog | None = None) -> None:
    """Poll /ping until 200, printing progress every few seconds; every answer goes to `log`."""

    def ask() -> int | None:
        status = ping_status(base_url)
        if log is not None:
            log.add(status)
        return status

    def note(status: int | None, elapsed: float) -> None:
        shown = "no answer" if status is None else f"HTTP {status}"
        progress(f"waiting for {base_url}/ping: {shown} after {elapsed:.0f} s")

    waited = wait_for_ping(base_url, timeout, alive=alive, note=note, probe=ask)
    if waited.outcome == "exited":
        raise RuntimeError(f"the container exited before /ping answered 200 (last status {waited.status})")
    if waited.outcome == "timeout":
        raise RuntimeError(f"{base_url}/ping did not answer 200 within {timeout:.0f} s (last status {waited.status})")
    progress(f"ready after {waited.elapsed:.1f} s ({base_url}/ping answered 200)")


class _Process(Protocol):
    @property
    def pid(self) -> int: ...


@dataclass
class LocalProcessTarget[P: _Process](Target):
    """A container the suite starts itself as a local process (kind "process"), held as a `P` while it runs:
    its `pid` then, which the cases that watch or signal it read (:mod:`bidi_tts_conformance.process_probe`).
    A subclass starts the process, sets `base_url` and calls :meth:`_await_ready`; its stop() ends what
    :meth:`_let_go` hands it."""

    kind: str = "process"
    ready_timeout: float = READY_TIMEOUT_S
    _proc: P | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        """The process's id while the target holds it."""
        return self._proc.pid if self._proc is not None else None

    def _await_ready(self, alive: Callable[[], bool], progress: Progress) -> None:
        """Name the process in the description and wait for its /ping to answer 200 (every answer to
        `ping_log`); stop the target when the wait fails (RuntimeError) or is interrupted, then let the error
        through."""
        assert self.base_url is not None
        self.description = f"process pid {self.pid} {self.base_url}"
        try:
            wait_ready(self.base_url, self.ready_timeout, progress, alive, self.ping_log)
        except BaseException:
            self.stop()
            raise

    def _let_go(self) -> P | None:
        """The process, no longer held (None when none was): stop() ends it once, however often it is called."""
        proc, self._proc = self._proc, None
        return proc


@dataclass
class ProcessTarget(LocalProcessTarget[LocalContainer]):
    """The reference container as a local process on a free port."""

    log_path: str | None = None

    def start(self, progress: Progress = _quiet) -> None:
        self.ping_log = PingLog()  # before the start: the loading window counts from here
        proc = self._proc = LocalContainer(log=Path(self.log_path) if self.log_path else None)
        self.base_url = proc.url
        progress(f"starting the reference container: {' '.join(proc.command)}")
        self._await_ready(proc.alive, progress)

    def stop(self) -> None:
        if (proc := self._let_go()) is not None:
            proc.stop()


def docker_available(image: str) -> tuple[bool, str]:
    """Whether a Docker engine answers and holds `image`; the reason when not."""
    try:
        import docker

        client = docker.from_env(timeout=5)  # type: ignore[attr-defined]
        client.ping()
    except Exception as exc:  # any failure means "no engine here"
        return False, f"no Docker engine answers ({type(exc).__name__})"
    try:
        client.images.get(image)
    except Exception:
        return False, f"the Docker engine has no image {image!r}"
    return True, ""


@dataclass
class DockerTarget(Target):
    """The reference image, run through testcontainers."""

    kind: str = "docker"
    ready_timeout: float = READY_TIMEOUT_S
    _container: Any = field(default=None, repr=False)

    def start(self, progress: Progress = _quiet) -> None:
        os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
        os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")
        from testcontainers.core.container import DockerContainer

        assert self.image
        progress(f"starting image {self.image} with testcontainers")
        container = DockerContainer(self.image).with_exposed_ports(8080)
        self.ping_log = PingLog()
        container.start()
        self._container = container
        host = container.get_container_host_ip()
        if host in ("localhost", "0.0.0.0"):
            host = "127.0.0.1"
        self.base_url = f"http://{host}:{container.get_exposed_port(8080)}"
        self.description = f"docker {self.image} {self.base_url}"

        def alive() -> bool:
            container.get_wrapped_container().reload()
            return bool(container.get_wrapped_container().status in ("running", "created"))

        try:
            wait_ready(self.base_url, self.ready_timeout, progress, alive, self.ping_log)
        except RuntimeError as exc:
            tail = self._log_tail()
            self.stop()
            raise RuntimeError(f"{exc}; last container output: {tail}") from None
        except BaseException:
            self.stop()
            raise

    @property
    def running_container(self) -> Any:
        """docker-py's Container while it runs, else None (for resource probes and signals)."""
        return self._container.get_wrapped_container() if self._container is not None else None

    def _log_tail(self, lines: int = 5) -> str:
        try:
            out, err = self._container.get_logs()
            text = (out + err).decode("utf-8", "replace").strip().splitlines()
            return " | ".join(text[-lines:]) or "(none)"
        except Exception:  # the logs are a courtesy; never mask the real failure
            return "(unavailable)"

    def stop(self) -> None:
        container, self._container = self._container, None
        if container is not None:
            container.stop()

    def image_labels(self) -> dict[str, str]:
        import docker

        assert self.image
        client = docker.from_env(timeout=10)  # type: ignore[attr-defined]
        return dict(client.images.get(self.image).labels or {})


@dataclass
class SageMakerEndpointTarget(Target):
    """A SageMaker endpoint (or a local stand-in reached through --endpoint-url)."""

    kind: str = "sagemaker"
    endpoint_name: str = ""
    region: str = "us-east-1"
    endpoint_url: str | None = None
    ca_file: str | None = None
    _boto_client: Any = field(default=None, repr=False)

    async def _open(self, **opts: Any) -> Transport:
        """Open one session. Option ``data_type``: FrameKind.TEXT/BINARY or None (unset); the
        dialect's route goes in X-Amzn-SageMaker-Model-Invocation-Path."""
        from bidi_tts.transports.sagemaker import SageMakerTarget, SageMakerTransport

        target = SageMakerTarget(
            self.endpoint_name,
            region=self.region,
            endpoint_url=self.endpoint_url,
            ca_file=self.ca_file,
            invocation_path=self.dialect.invocation_path,
        )
        transport: Transport = await SageMakerTransport.open(target, data_type=opts.get("data_type"))
        return transport

    @property
    def label(self) -> str:
        via = f" via {self.endpoint_url}" if self.endpoint_url else ""
        return f"sagemaker endpoint {self.endpoint_name} ({self.region}){via}"

    async def post_invocations(self, body: bytes, *, first_only: bool = False) -> PostAnswer:
        """``POST /invocations`` through InvokeEndpointWithResponseStream (boto3, in a thread).

        A container's error status reaches a SageMaker client as a 424 ModelError carrying the
        status and body the container gave (``OriginalStatusCode``, ``OriginalMessage``); they are
        returned as that status and body, so a case judges what the container answered. Any other
        operation error raises. With `first_only`, the stream is dropped after its first bytes."""
        return await asyncio.to_thread(self._post_blocking, body, first_only)

    def _post_blocking(self, body: bytes, first_only: bool) -> PostAnswer:
        from bidi_tts.transports.sagemaker import SageMakerTarget
        from bidi_tts.transports.sagemaker_errors import SageMakerConfigError, SageMakerModelError
        from bidi_tts.transports.sagemaker_response_stream import (
            invoke_with_response_stream,
            response_stream_client,
        )

        if self._boto_client is None:
            try:
                self._boto_client = response_stream_client(SageMakerTarget(
                    self.endpoint_name, region=self.region, endpoint_url=self.endpoint_url, ca_file=self.ca_file))
            except SageMakerConfigError as exc:  # boto3 is not installed: say how to get it
                raise CaseSkipped(str(exc)) from None
        started = time.perf_counter()
        try:
            reply = invoke_with_response_stream(self._boto_client, self.endpoint_name, body)
        except SageMakerModelError as exc:
            if exc.original_status_code is None:
                raise
            message = (exc.original_message or "").encode("utf-8")
            return PostAnswer(exc.original_status_code, "", message, None, time.perf_counter() - started)
        data = bytearray()
        try:
            for _, chunk in reply.chunks():
                data += chunk
                if first_only:
                    break
        finally:
            if first_only:
                reply.close()
        return PostAnswer(200, reply.content_type or "", bytes(data), reply.first_byte_s,
                          time.perf_counter() - reply.started)


@dataclass(frozen=True, slots=True)
class PostAnswer:
    """What ``POST /invocations`` answered: status, content type, body, time to the first body
    bytes and in all (seconds)."""

    status: int
    content_type: str
    body: bytes
    first_s: float | None
    total_s: float

