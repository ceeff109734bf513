"""The transport seam: send a message, receive frames with their kind, close.

Session logic, conformance cases and load-test users run unchanged over any implementation: the
direct WebSocket (:mod:`bidi_tts.transports.websocket`) or SageMaker
InvokeEndpointWithBidirectionalStream (:mod:`bidi_tts.transports.sagemaker`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from bidi_tts.deadline import Deadline
from bidi_tts.frames import Frame, FrameKind

__all__ = ["AsyncWaitClosed", "ConnectError", "Frame", "SyncWaitClosed", "Transport", "TransportClosed",
           "TransportError", "TransportTimeout"]  # Frame lives in the core (bidi_tts.frames); named here too


class TransportError(Exception):
    """Base class of every error a transport raises."""


class TransportClosed(TransportError):
    """The stream ended. `code`/`reason` are the WebSocket close code and reason when known
    (over SageMaker they come from the ModelStreamError)."""

    def __init__(self, code: int | None, reason: str = "", *, by_peer: bool = True) -> None:
        self.code = code
        self.reason = reason
        self.by_peer = by_peer
        super().__init__(f"stream closed (code={code}, reason={reason!r})")


class TransportTimeout(TransportError, TimeoutError):
    """Nothing arrived before the deadline."""


class ConnectError(TransportError):
    """The connection could not be opened (refused, rejected handshake, 4xx/5xx from the edge)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class AsyncWaitClosed:
    """``wait_closed`` for an asyncio transport, written once for every implementation."""

    async def receive(self, timeout: float | None = None) -> Frame:  # pragma: no cover - provided by the transport
        raise NotImplementedError

    async def wait_closed(self, timeout: float | None = None) -> TransportClosed:
        """Wait until the stream ends (frames arriving meanwhile are dropped); TransportTimeout
        after `timeout` seconds."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    await self.receive()
        except TransportClosed as closed:
            return closed
        except TimeoutError:
            raise TransportTimeout(f"not closed within {timeout} s") from None


class SyncWaitClosed:
    """``wait_closed`` for a blocking transport (the sync WebSocket, the gevent bridge)."""

    def receive(self, timeout: float | None = None) -> Frame:  # pragma: no cover - provided by the transport
        raise NotImplementedError

    def wait_closed(self, timeout: float) -> TransportClosed:
        """Drain frames until the stream ends, or TransportTimeout after `timeout` seconds."""
        deadline = Deadline(timeout)
        while not deadline.expired:
            try:
                self.receive(timeout=deadline.remaining())
            except TransportClosed as closed:
                return closed
        raise TransportTimeout(f"not closed within {timeout} s")


@runtime_checkable
class Transport(Protocol):
    """An open bidirectional stream to one container session."""

    #: True when the transport reports each frame's kind (opcode or DataType).
    knows_frame_kind: bool

    async def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> None:
        """Send one message as one frame. `kind` None: TEXT for str, BINARY for bytes."""

    async def send_fragmented(self, fragments: Sequence[bytes], *, kind: FrameKind) -> None:
        """Send one message split into several frames (WebSocket continuation frames;
        SageMaker PARTIAL parts followed by a COMPLETE part)."""

    async def receive(self, timeout: float | None = None) -> Frame:
        """The next frame. Raises TransportClosed at the end of the stream and TransportTimeout
        when `timeout` seconds pass first; a timeout leaves the stream usable."""

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Close from the client side (idempotent)."""

    async def wait_closed(self, timeout: float | None = None) -> TransportClosed:
        """Wait until the stream ends (see :class:`AsyncWaitClosed`, which implements it once)."""

    @property
    def close_code(self) -> int | None:
        """The close code once the stream has ended, else None."""
