"""Which upstream the relay forwards to, and opening one session (one container WebSocket) to it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from bidi_tts.transports.base import Transport
from bidi_tts.transports.sagemaker import SageMakerTarget
from bidi_tts.transports.websocket import WebSocketTransport, websocket_url


class UsageError(ValueError):
    """Bad command-line input; its message is one line for people."""


class Unreachable(UsageError):
    """Nothing usable answers at the upstream (exit 69, docs/exit-codes.md); one line for people."""


def check_container_url(url: str) -> str:
    """The URL itself when it names a scheme (http, https, ws, wss) and a host, else UsageError."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
        raise UsageError(f"--container-url {url!r} needs a scheme and a host, e.g. http://127.0.0.1:8080")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise UsageError(f"--container-url {url!r} has a bad port") from None
    return url


@dataclass(frozen=True, slots=True)
class Upstream:
    """A container base URL, or a SageMaker endpoint (through the SDK), to open sessions on."""

    container_url: str | None = None
    target: SageMakerTarget | None = None
    open_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if (self.container_url is None) == (self.target is None):
            raise UsageError("give exactly one of --container-url and --endpoint-name")
        if self.container_url is not None:
            check_container_url(self.container_url)

    def describe(self) -> str:
        if self.container_url is not None:
            return websocket_url(self.container_url)
        assert self.target is not None
        where = self.target.endpoint_url or f"SageMaker {self.target.region}"
        return f"endpoint {self.target.endpoint_name} ({where})"

    async def open(self) -> tuple[Transport, float]:
        """A new session and how long opening it took (seconds). Raises ConnectError."""
        began = time.perf_counter()
        transport: Transport
        if self.container_url is not None:
            transport = await WebSocketTransport.open(self.container_url, open_timeout=self.open_timeout_s)
        else:
            from bidi_tts.transports.sagemaker import SageMakerTransport

            assert self.target is not None
            transport = await SageMakerTransport.open(self.target, open_timeout=self.open_timeout_s)
        return transport, time.perf_counter() - began
