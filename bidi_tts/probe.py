"""Is a container there? One TCP connection, one ``GET /ping``, and waiting for ``/ping`` to say ready.

A container answers ``/ping`` with 503 while it loads and 200 once it serves (CONTRACT.md SM-PING).
Every command of the project that checks or waits for a target comes here: the suite's preflight and
targets, the load run's preflight, the capacity sweep, :mod:`bidi_tts.local_container`. When nothing
answers, :class:`Unanswered` carries a reason word (:data:`REASONS`) and the detail, and each command
says it in its own words.

``GET /ping`` goes over ``http.client``: no proxy from the environment and no redirect is followed,
since ``/ping`` is the container's own answer. Waits run on :class:`bidi_tts.deadline.Deadline`.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from bidi_tts.deadline import Deadline

__all__ = ["DEFAULT_PORTS", "REASONS", "Unanswered", "Waited", "connect", "host_port", "ping", "ping_status",
           "wait_for_ping"]

DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
#: Why nothing answered: the host has no address; the port refused; no answer in time; the TLS
#: handshake failed; something answered but not in HTTP; any other failure to reach it.
REASONS = ("unresolved", "refused", "timeout", "tls", "not_http", "unreachable")
Reason = Literal["unresolved", "refused", "timeout", "tls", "not_http", "unreachable"]


class Unanswered(Exception):
    """Nothing (usable) answered; ``reason`` is one of :data:`REASONS`, ``detail`` the cause in words."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason: Reason = reason
        self.detail = detail


def host_port(url: str) -> tuple[str, int]:
    """The host and port of ``url``, the scheme's default port when it names none (ValueError: not a number)."""
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or DEFAULT_PORTS.get(parts.scheme, 80)


def _classify(exc: OSError | http.client.HTTPException, *, http_answer: bool = False) -> Unanswered:
    """The reason for ``exc``; ``http_answer``: a connection was open and an HTTP answer was due."""
    if isinstance(exc, socket.gaierror):
        return Unanswered("unresolved", exc.strerror or str(exc))
    if isinstance(exc, ConnectionRefusedError):
        return Unanswered("refused", "connection refused")
    if isinstance(exc, TimeoutError):
        return Unanswered("timeout", str(exc))
    if isinstance(exc, ssl.SSLError):
        return Unanswered("tls", str(exc.reason or exc))
    if isinstance(exc, OSError) and not (http_answer and isinstance(exc, ConnectionError)):
        return Unanswered("unreachable", exc.strerror or str(exc) or type(exc).__name__)
    return Unanswered("not_http", f"{type(exc).__name__} {exc}".rstrip())


def connect(url: str, timeout: float = 3.0) -> None:
    """Open and close one TCP connection to ``url``'s host and port; :class:`Unanswered` when none opens."""
    try:
        socket.create_connection(host_port(url), timeout=timeout).close()
    except OSError as exc:
        raise _classify(exc) from None


def ping(base_url: str, timeout: float = 2.0) -> int:
    """The HTTP status of ``GET {base_url}/ping``; :class:`Unanswered` when no HTTP answer comes."""
    parts = urlsplit(base_url)
    host, port = host_port(base_url)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(host, port, timeout=timeout)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", parts.path.rstrip("/") + "/ping")
        return int(conn.getresponse().status)
    except (OSError, http.client.HTTPException) as exc:
        raise _classify(exc, http_answer=True) from None
    finally:
        conn.close()


def ping_status(base_url: str, timeout: float = 2.0) -> int | None:
    """The HTTP status of ``GET {base_url}/ping``, or None when nothing answers (or the URL is no URL)."""
    try:
        return ping(base_url, timeout)
    except (Unanswered, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Waited:
    """How a wait ended: ``ready`` (the status settled), ``exited`` (the process died) or ``timeout``."""

    outcome: Literal["ready", "exited", "timeout"]
    status: int | None  # the last answer to GET /ping (None: no answer)
    elapsed: float  # seconds waited

    @property
    def ready(self) -> bool:
        return self.outcome == "ready"


def wait_for_ping(
    base_url: str,
    timeout: float,
    *,
    settled: Callable[[int | None], bool] = lambda status: status == 200,
    alive: Callable[[], bool] = lambda: True,
    note: Callable[[int | None, float], None] | None = None,
    probe: Callable[[], int | None] | None = None,
    interval: float = 0.25,
    note_every: float = 5.0,
) -> Waited:
    """Ask ``/ping`` every ``interval`` seconds until its status is ``settled`` (200 by default), the
    process behind it is no longer ``alive``, or ``timeout`` seconds pass. ``note(status, elapsed)`` is
    called every ``note_every`` seconds while it waits; ``probe`` replaces :func:`ping_status` (one that
    raises ends the wait with its exception)."""
    ask = probe or (lambda: ping_status(base_url))
    deadline = Deadline(timeout)
    next_note = note_every
    while True:
        status = ask()
        if settled(status):
            return Waited("ready", status, deadline.elapsed())
        if not alive():
            return Waited("exited", status, deadline.elapsed())
        if deadline.expired:
            return Waited("timeout", status, deadline.elapsed())
        if note is not None and deadline.elapsed() >= next_note:
            note(status, deadline.elapsed())
            next_note = deadline.elapsed() + note_every
        time.sleep(min(interval, deadline.remaining()))
