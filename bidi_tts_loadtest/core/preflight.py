"""Is anything listening at the target? One TCP connect before a run, so a dead port is one line in seconds."""

from __future__ import annotations

from typing import Any

from bidi_tts import probe


def unreachable(url: str, timeout_s: float = 3.0) -> str | None:
    """Why nothing answers a TCP connect at `url`'s host and port (None when something does)."""
    try:
        host, port = probe.host_port(url)
    except ValueError:
        return None  # not a URL this checks; the usage checks say why
    if not host:
        return None
    try:
        probe.connect(url, timeout_s)
    except probe.Unanswered as exc:
        if exc.reason == "unresolved":
            return f"cannot resolve {host!r} (from {url})"
        if exc.reason == "timeout":
            return f"nothing answers at {host}:{port} within {timeout_s:g} s (from {url})"
        why = "connection refused" if exc.reason == "refused" else exc.detail
        return f"nothing listens at {host}:{port} ({why}; from {url})"
    return None


def target_unreachable(options: Any, host: str | None, timeout_s: float = 3.0) -> str | None:
    """The preflight for a load run: the container URL, or the --endpoint-url of an endpoint when one is given."""
    if getattr(options, "endpoint_name", None):
        url = getattr(options, "endpoint_url", None)
        return unreachable(url, timeout_s) if url else None  # the real runtime: the sessions' own errors say why
    return unreachable(host, timeout_s) if host else None
