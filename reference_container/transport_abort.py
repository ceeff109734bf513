"""Lets a WebSocket session drop its connection without the closing handshake.

ASGI can only close a WebSocket gracefully, and a graceful close waits until the peer has read
everything still buffered: a peer that holds its connection open and never reads would keep it
(and its memory) forever. This middleware puts a reset of the server's transport into the scope
under :data:`ABORT_KEY` when the server exposes its transport (uvicorn's protocols do, through their
bound `send`), so a session can reset such a peer. Elsewhere the key is absent and sessions fall
back to a graceful close.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

ABORT_KEY = "bidi_tts.transport_abort"


class TransportAbortMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            transport = getattr(getattr(send, "__self__", None), "transport", None)
            if callable(getattr(transport, "abort", None)):
                scope[ABORT_KEY] = lambda: reset(transport)
        await self.app(scope, receive, send)


def reset(transport: Any) -> None:
    """Drop the connection at once with a TCP reset.

    `transport.abort()` alone closes the socket, but the kernel then keeps trying to deliver the
    unsent bytes (and the peer stays connected) for as long as the peer's window is shut; a zero
    linger time makes the close a reset.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
