"""What the asyncio and the blocking WebSocket transports share: URL, connect options, errors, close."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from bidi_tts.protocol import WS_PATH
from bidi_tts.transports.base import ConnectError, TransportClosed

_WS_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}


def websocket_url(container_url: str, path: str = WS_PATH) -> str:
    """Turn a container base URL (http://host:port) into its WebSocket URL."""
    parts = urlsplit(container_url)
    scheme = _WS_SCHEMES.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise ValueError(f"not an http(s) or ws(s) URL: {container_url!r} (e.g. http://127.0.0.1:8080)")
    base = parts.path.rstrip("/")
    if base.endswith(WS_PATH):
        base = base[: -len(WS_PATH)]
    return urlunsplit((scheme, parts.netloc, base + path, parts.query, ""))


def resolve_url(url: str) -> str:
    """A full ws(s):// URL as given, else the WebSocket URL of an http(s):// container base URL."""
    return url if urlsplit(url).scheme in ("ws", "wss") and urlsplit(url).netloc else websocket_url(url)


def connect_options(headers: Mapping[str, str] | None, open_timeout: float) -> dict[str, Any]:
    """Options both clients pass to ``connect``: no size limit, no compression (audio is PCM)."""
    return {"additional_headers": dict(headers or {}), "open_timeout": open_timeout, "max_size": None,
            "compression": None}


@contextlib.contextmanager
def connect_errors(ws_url: str) -> Iterator[None]:
    """Translate a failed opening handshake into :class:`ConnectError`."""
    try:
        yield
    except InvalidStatus as exc:
        status = exc.response.status_code
        raise ConnectError(f"{ws_url}: handshake rejected with HTTP {status}", status=status) from exc
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        raise ConnectError(f"{ws_url}: cannot connect ({type(exc).__name__})") from exc


def transport_closed(exc: ConnectionClosed) -> TransportClosed:
    """The transport's view of a websockets close: the code and reason received, and who began it."""
    rcvd = exc.rcvd
    by_peer = rcvd is not None and exc.rcvd_then_sent is not False
    return TransportClosed(rcvd.code if rcvd else None, rcvd.reason if rcvd else "", by_peer=by_peer)


class CloseState:
    """The close bookkeeping of a WebSocket transport: the first close seen wins."""

    _closed: TransportClosed | None = None

    @property
    def close_code(self) -> int | None:
        return self._closed.code if self._closed else None

    def _closed_error(self, exc: ConnectionClosed) -> TransportClosed:
        if self._closed is None:
            self._closed = transport_closed(exc)
        return self._closed

    def _closed_by_us(self, ws: Any) -> None:
        if self._closed is None:
            self._closed = TransportClosed(ws.close_code, ws.close_reason or "", by_peer=False)
