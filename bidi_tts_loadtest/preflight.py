"""Is anything listening at the target? One TCP connect before a run, so a dead port is one line in seconds."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}


def unreachable(url: str, timeout_s: float = 3.0) -> str | None:
    """Why nothing answers a TCP connect at `url`'s host and port (None when something does)."""
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        return None  # not a URL this checks; the usage checks say why
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme, 80)
    except ValueError:
        return None
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except socket.gaierror:
        return f"cannot resolve {host!r} (from {url})"
    except TimeoutError:
        return f"nothing answers at {host}:{port} within {timeout_s:g} s (from {url})"
    except OSError as exc:
        why = "connection refused" if isinstance(exc, ConnectionRefusedError) else (exc.strerror or type(exc).__name__)
        return f"nothing listens at {host}:{port} ({why}; from {url})"


def target_unreachable(options: Any, host: str | None, timeout_s: float = 3.0) -> str | None:
    """The preflight for a load run: the container URL, or the --endpoint-url of an endpoint when one is given."""
    if getattr(options, "endpoint_name", None):
        url = getattr(options, "endpoint_url", None)
        return unreachable(url, timeout_s) if url else None  # the real runtime: the sessions' own errors say why
    return unreachable(host, timeout_s) if host else None
