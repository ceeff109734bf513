"""Up-front checks: a bad command line or a target that cannot be checked is one line, not a
failure per case.

Runs from the plugin's ``pytest_cmdline_main``, after the options are parsed and before pytest
configures its session, so nothing else is printed around the line:

- usage errors (exit 4, pytest's own ``ERROR: ...`` line): a ``--container-url`` without an http(s)
  scheme, both ``--container-url`` and ``--endpoint-name``, a ``--case`` glob or ``--clause`` that
  selects nothing, a malformed ``--region`` or ``--endpoint-url``, a missing ``--endpoint-ca`` file,
  the SageMaker SDK not installed, and, with no target given, a reference container that cannot start
  here (its dependencies not installed and no Docker image);
- the target cannot be reached or is not a container (exit :data:`EXIT_UNREACHABLE`, 69, sysexits'
  EX_UNAVAILABLE): nothing listens, nothing answers within a few seconds, the URL is some other HTTP
  server (``/ping`` not 200 and no WebSocket at ``/invocations-bidirectional-stream``), a container
  still loading (``/ping`` 503) that does not become ready within ``--ready-timeout``; for an
  endpoint: no AWS credentials, a region whose runtime host does not resolve, a runtime (or stand-in)
  that does not answer, an unknown endpoint, an endpoint whose container does not answer.

The target checks run only when the command collects the conformance cases (a path argument is, or
holds, a ``test_cases.py`` that defines them), not in listings (``--list-cases``, ``--collect-only``,
``--help``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import socket
import ssl
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bidi_tts import exit_codes, probe
from bidi_tts.install_hint import install_command
from bidi_tts.protocol import WS_PATH
from bidi_tts_conformance import selection
from bidi_tts_conformance.targets import READY_TIMEOUT_S, docker_available

EXIT_UNREACHABLE = exit_codes.UNREACHABLE  # the target cannot be reached or is not a container
CONNECT_TIMEOUT_S = 3.0  # for a TCP connection, and again for an HTTP or WebSocket answer
ENDPOINT_OPEN_TIMEOUT_S = 6.0  # one InvokeEndpointWithBidirectionalStream, through the SDK
DEFAULT_READY_TIMEOUT_S = READY_TIMEOUT_S  # SM-PING: /ping must answer 200 within 8 minutes of start
PROGRESS_EVERY_S = 5.0

# Options that only list or explain: no target is checked.
LISTING_OPTIONS = ("help", "version", "collectonly", "showfixtures", "show_fixtures_per_test", "markers",
                   "list_cases")
# Modules `python -m reference_container` needs (the `container` extra).
REFERENCE_MODULES = ("uvicorn", "starlette", "soxr", "torch", "kokoro", "misaki")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")  # us-east-1, us-gov-west-1, ap-southeast-2, ...
REFERENCE_REGION = "us-east-1"  # resolved to tell "a wrong region" from "no DNS at all"

Progress = Callable[[str], None]


class Unreachable(Exception):
    """The target cannot be checked; the message is the one line to show."""


def add_options(group: pytest.OptionGroup) -> None:
    """The selection and readiness options (called from the plugin's pytest_addoption)."""
    group.addoption("--clause", action="append", default=[], metavar="CLAUSE",
                    help="run only cases citing this contract clause (e.g. TTS-ERROR, 'SM-*'); repeatable")
    group.addoption("--ready-timeout", type=float, default=DEFAULT_READY_TIMEOUT_S, metavar="S",
                    help="seconds to wait for a --container-url whose /ping answers 503 (still loading) "
                         f"to answer 200 (default {DEFAULT_READY_TIMEOUT_S:.0f}, SM-PING's bound)")


# -- the command line ------------------------------------------------------------------------------
def check_command_line(config: pytest.Config) -> int | None:
    """Raise pytest.UsageError for a bad command line; print one line and return
    :data:`EXIT_UNREACHABLE` for a target that cannot be checked; None to go on."""
    opt = config.getoption
    if getattr(config.option, "help", False) or getattr(config.option, "version", False):
        return None
    url = opt("container_url", None)
    endpoint = opt("endpoint_name", None)
    if url:
        parts = urlsplit(str(url))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise pytest.UsageError(f"--container-url {url!r} is not an http(s) URL; give it as http://HOST:PORT "
                                    "(e.g. http://127.0.0.1:8080)")
        if endpoint:
            raise pytest.UsageError("give --container-url or --endpoint-name, not both")
    globs, clauses = opt("case", None) or [], opt("clause", None) or []
    if selection.selecting(globs, clauses):
        from bidi_tts_conformance.cases import REGISTRY

        try:
            selection.check(REGISTRY, globs, clauses)
        except selection.SelectionError as exc:
            raise pytest.UsageError(str(exc)) from None
    if any(getattr(config.option, name, False) for name in LISTING_OPTIONS) or not runs_cases(config):
        return None
    try:
        if url:
            check_url(str(url).rstrip("/"), ready_timeout=float(opt("ready_timeout")), progress=_progress)
        elif endpoint:
            check_endpoint(str(endpoint), region=str(opt("region")), endpoint_url=opt("endpoint_url"),
                           ca_file=opt("endpoint_ca"))
        else:
            check_reference(str(opt("target")), str(opt("image")))
    except Unreachable as exc:
        print(f"ERROR: {exc}", file=sys.stderr, flush=True)
        return EXIT_UNREACHABLE
    return None


def _progress(message: str) -> None:
    print(f"[conformance] {message}", flush=True)


def runs_cases(config: pytest.Config) -> bool:
    """Whether the command collects the conformance cases: a path argument is a ``test_cases.py``
    that defines them or a folder holding one (itself, ``conformance/`` or ``bidi_tts_conformance/``)."""
    for arg in config.args:
        path = Path(config.invocation_params.dir, str(arg).split("::")[0])
        if path.is_dir():
            candidates = [path / "test_cases.py", path / "conformance" / "test_cases.py",
                          path / "bidi_tts_conformance" / "test_cases.py"]
        else:
            candidates = [path]
        for candidate in candidates:
            if candidate.name == "test_cases.py" and candidate.is_file() and _defines_cases(candidate):
                return True
    return False


def _defines_cases(path: Path) -> bool:
    try:
        return "conformance_cases" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


# -- a running container ---------------------------------------------------------------------------
def _host_port(url: str) -> tuple[str, int]:
    try:
        return probe.host_port(url)
    except ValueError:
        raise pytest.UsageError(f"{url!r} has a port that is not a number") from None


def _connect(url: str, what: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Open and close one TCP connection to `url`'s host and port."""
    host, _ = _host_port(url)
    try:
        probe.connect(url, timeout)
    except probe.Unanswered as exc:
        raise Unreachable({
            "unresolved": f"cannot resolve the host {host!r} of {what} {url}",
            "refused": f"nothing listens at {what} {url} (connection refused)",
            "timeout": f"{what} {url} did not accept a connection within {timeout:.0f} s "
                       "(a wrong host or port, or a firewall)",
        }.get(exc.reason, f"cannot connect to {what} {url}: {exc.detail}")) from None


def _ping(url: str, timeout: float = CONNECT_TIMEOUT_S) -> int:
    """The status of GET /ping; Unreachable when no HTTP answer comes."""
    _host_port(url)
    try:
        return probe.ping(url, timeout)
    except probe.Unanswered as exc:
        raise Unreachable({
            "refused": f"nothing listens at --container-url {url} (connection refused)",
            "timeout": f"--container-url {url} accepted a connection but did not answer GET /ping within "
                       f"{timeout:.0f} s; is it an HTTP container?",
            "tls": f"TLS with --container-url {url} failed: {exc.detail}",
            "not_http": f"--container-url {url} does not speak HTTP: GET /ping got {exc.detail}",
        }.get(exc.reason, f"cannot reach --container-url {url}: {exc.detail}")) from None


def _websocket_problem(url: str, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """None when a WebSocket opens at the default route; else what happened instead."""
    from websockets.exceptions import InvalidMessage, InvalidStatus
    from websockets.sync.client import connect

    parts = urlsplit(url)
    ws_url = f"{'wss' if parts.scheme == 'https' else 'ws'}://{parts.netloc}{parts.path.rstrip('/')}{WS_PATH}"
    try:
        with connect(ws_url, open_timeout=timeout, close_timeout=1):
            return None
    except InvalidStatus as exc:
        return f"the WebSocket handshake at {WS_PATH} got HTTP {exc.response.status_code}"
    except InvalidMessage:
        return f"no WebSocket at {WS_PATH} (the handshake got no valid HTTP/1.1 answer)"
    except TimeoutError:
        return f"no WebSocket handshake answer at {WS_PATH} within {timeout:.0f} s"
    except Exception as exc:  # any other failed handshake says the same: no WebSocket here
        return f"no WebSocket at {WS_PATH} ({type(exc).__name__}: {exc})"


def check_url(url: str, *, ready_timeout: float = DEFAULT_READY_TIMEOUT_S, progress: Progress = _progress) -> None:
    """Something listens at `url`, answers HTTP, and is a container: /ping 200, or a WebSocket at the
    default route. /ping 503 (loading) is waited for, up to `ready_timeout` seconds, with progress."""
    _connect(url, "--container-url")
    status = _ping(url)
    if status == 503:
        status = _wait_loading(url, ready_timeout, progress)
    if status == 200:
        return
    problem = _websocket_problem(url)
    if problem is not None:
        raise Unreachable(f"--container-url {url} is not a TTS container: GET /ping answered {status} and "
                          f"{problem}")


def _wait_loading(url: str, ready_timeout: float, progress: Progress) -> int:
    progress(f"{url}/ping answers 503: the container is still loading; waiting up to {ready_timeout:.0f} s "
             "for 200 (--ready-timeout)")
    waited = probe.wait_for_ping(
        url, ready_timeout, settled=lambda status: status != 503, probe=lambda: _ping(url), interval=0.5,
        note=lambda status, elapsed: progress(f"still loading: /ping answers {status} after {elapsed:.0f} s"),
        note_every=PROGRESS_EVERY_S)
    if not waited.ready:
        raise Unreachable(f"--container-url {url} is still loading: /ping answered 503 for {waited.elapsed:.0f} s "
                          "(--ready-timeout)")
    progress(f"/ping answered {waited.status} after {waited.elapsed:.1f} s")
    assert waited.status is not None  # _ping answers a status or raises
    return waited.status


# -- a SageMaker endpoint --------------------------------------------------------------------------
def check_endpoint(name: str, *, region: str, endpoint_url: str | None = None, ca_file: str | None = None,
                   open_timeout: float = ENDPOINT_OPEN_TIMEOUT_S) -> None:
    """Credentials, region and the runtime resolve and answer, and one stream to `name` opens."""
    if ca_file and not Path(ca_file).is_file():
        raise pytest.UsageError(f"--endpoint-ca {ca_file!r}: no such file")
    if endpoint_url:
        parts = urlsplit(endpoint_url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise pytest.UsageError(f"--endpoint-url {endpoint_url!r} is not an https URL; give it as "
                                    "https://HOST:PORT")
        _connect(endpoint_url, "--endpoint-url")
        if parts.scheme == "https":
            _tls_handshake(endpoint_url, "--endpoint-url", ca_file)
    elif not REGION.match(region):
        raise pytest.UsageError(f"--region {region!r} is not an AWS region name (like us-east-1 or eu-west-2)")
    if importlib.util.find_spec("aws_sdk_sagemaker_runtime_http2") is None:
        raise pytest.UsageError("--endpoint-name needs the SageMaker transport, which is not installed: "
                                f"{install_command('sagemaker')}")
    asyncio.run(_check_endpoint(name, region, endpoint_url, ca_file, open_timeout))


async def _check_endpoint(name: str, region: str, endpoint_url: str | None, ca_file: str | None,
                          open_timeout: float) -> None:
    from bidi_tts.transports.base import ConnectError
    from bidi_tts.transports.sagemaker import (
        SageMakerConfigError,
        SageMakerCredentialsError,
        SageMakerModelError,
        SageMakerTarget,
        SageMakerTransport,
        SageMakerValidationError,
        resolve_identity,
    )

    _quiet_sdk_leftovers(asyncio.get_running_loop())
    target = SageMakerTarget(name, region=region, endpoint_url=endpoint_url, ca_file=ca_file)
    try:
        configured = await resolve_identity(target)
    except SageMakerConfigError as exc:
        raise pytest.UsageError(f"--region {region!r}: {exc}") from None
    except SageMakerCredentialsError as exc:
        raise Unreachable(str(exc)) from None
    if configured is None:  # the SDK's own host for the region
        host = f"runtime.sagemaker.{region}.amazonaws.com"
        await _resolve_region_host(host, region)
        configured = f"https://{host}"
    if not endpoint_url:
        _connect(configured, "the SageMaker runtime")
    try:
        transport = await SageMakerTransport.open(target, open_timeout=open_timeout)
    except SageMakerValidationError as exc:
        where = "" if endpoint_url else f" in --region {region}"
        raise Unreachable(f"{str(exc).rstrip('.')}; is --endpoint-name right{where}?") from None
    except SageMakerModelError as exc:
        raise Unreachable(f"{str(exc).rstrip('.')}; the endpoint answers but its container does not") from None
    except ConnectError as exc:
        raise Unreachable(str(exc)) from None
    await transport.close()


def _quiet_sdk_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Drop the SDK's "Task exception was never retrieved" for the request body it still writes
    after the edge refused the stream (the refusal itself is what the line reports)."""

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException) and "HTTP_STREAM_HAS_COMPLETED" in f"{getattr(exc, 'name', '')} {exc}":
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def _tls_handshake(url: str, what: str, ca_file: str | None, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """One TLS handshake with `url`, trusting `ca_file` (else the system store), as the SDK will."""
    host, port = _host_port(url)
    context = ssl.create_default_context(cafile=ca_file)
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=host):
                return
    except ssl.SSLCertVerificationError as exc:
        hint = "is --endpoint-ca its CA?" if ca_file else "give its CA certificate with --endpoint-ca PATH"
        raise Unreachable(f"{what} {url}: its TLS certificate is not trusted ({exc.verify_message}); "
                          f"{hint}") from None
    except TimeoutError:
        raise Unreachable(f"{what} {url} accepted a connection but did not complete a TLS handshake within "
                          f"{timeout:.0f} s") from None
    except (ssl.SSLError, OSError) as exc:
        raise Unreachable(f"{what} {url}: the TLS handshake failed ({getattr(exc, 'reason', None) or exc})") from None


async def _resolves(host: str, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            await loop.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        return False
    return True


async def _resolve_region_host(host: str, region: str) -> None:
    if await _resolves(host):
        return
    if region != REFERENCE_REGION and await _resolves(f"runtime.sagemaker.{REFERENCE_REGION}.amazonaws.com"):
        raise Unreachable(f"--region {region!r}: {host} does not exist; is the region right?")
    raise Unreachable(f"cannot resolve the SageMaker runtime {host} (no DNS answer): no network here, "
                      f"or a wrong --region {region!r}")


# -- the reference container -----------------------------------------------------------------------
def missing_reference_modules(modules: Sequence[str] = REFERENCE_MODULES) -> list[str]:
    """The reference container's dependencies that are not installed."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def check_reference(kind: str, image: str) -> None:
    """With no target given the suite starts the reference container: as a process, that needs
    the `container` extra; `--target auto` falls back to a Docker image when an engine holds it."""
    if kind == "docker":
        return
    missing = missing_reference_modules()
    if not missing:
        return
    docker_note = ""
    if kind == "auto":
        available, why = docker_available(image)
        if available:
            return
        docker_note = f"; nor can Docker run its image instead: {why}"
    raise pytest.UsageError(
        "no --container-url or --endpoint-name, so the suite starts the reference container, but its "
        f"dependencies are not installed here (missing {', '.join(missing)}){docker_note}. "
        f"Install the 'container' extra ({install_command('container')}), or check a running container with "
        "--container-url http://HOST:PORT")
