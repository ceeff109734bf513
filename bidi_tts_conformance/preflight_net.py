"""The network under a preflight: one TCP connection, one TLS handshake, one DNS answer.

Each check passes silently or raises :class:`Unreachable` with the one line to show (exit 69);
a port that is not a number is a usage error. ``what`` names the option the URL came from
(``--container-url``, ``--endpoint-url``, ...), so the line says which part of the command to fix.
"""

from __future__ import annotations

import asyncio
import socket
import ssl

import pytest

from bidi_tts import probe

CONNECT_TIMEOUT_S = 3.0  # for a TCP connection, and again for an HTTP, TLS or WebSocket answer


class Unreachable(Exception):
    """The target cannot be checked; the message is the one line to show."""


def host_port(url: str) -> tuple[str, int]:
    """The host and port of `url`; a usage error when its port is not a number."""
    try:
        return probe.host_port(url)
    except ValueError:
        raise pytest.UsageError(f"{url!r} has a port that is not a number") from None


def connect(url: str, what: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Open and close one TCP connection to `url`'s host and port."""
    host, _ = host_port(url)
    try:
        probe.connect(url, timeout)
    except probe.Unanswered as exc:
        raise Unreachable({
            "unresolved": f"cannot resolve the host {host!r} of {what} {url}",
            "refused": f"nothing listens at {what} {url} (connection refused)",
            "timeout": f"{what} {url} did not accept a connection within {timeout:.0f} s "
                       "(a wrong host or port, or a firewall)",
        }.get(exc.reason, f"cannot connect to {what} {url}: {exc.detail}")) from None


def tls_handshake(url: str, what: str, ca_file: str | None, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """One TLS handshake with `url`, trusting `ca_file` (else the system store), as the SDK will."""
    host, port = host_port(url)
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


async def resolves(host: str, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether DNS answers with an address for `host` within `timeout` seconds."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            await loop.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        return False
    return True
