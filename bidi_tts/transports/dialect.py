"""A transport that speaks a dialect: it wraps any transport and translates each message both ways.

Everything built on :class:`~bidi_tts.transports.base.Transport` (the suite's Conversation, the
load test's users and ladders) gets the dialect by wrapping; frame kinds stay the inner
transport's business, so a BINARY send stays BINARY on the wire.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import pairwise
from typing import Protocol

from bidi_tts.deadline import Deadline
from bidi_tts.dialects.base import Translator, WireMessage
from bidi_tts.frames import Frame, FrameKind
from bidi_tts.transports.base import AsyncWaitClosed, SyncWaitClosed, Transport, TransportTimeout

__all__ = ["DialectTransport", "SyncDialectTransport", "split_evenly"]


def split_evenly(data: bytes, parts: int) -> list[bytes]:
    """`data` cut into `parts` runs of about equal length (at least one byte each)."""
    parts = max(1, min(parts, len(data)))
    cuts = [len(data) * i // parts for i in range(parts + 1)]
    return [data[a:b] for a, b in pairwise(cuts)]


def _as_bytes(payload: bytes | str) -> bytes:
    return payload.encode("utf-8") if isinstance(payload, str) else payload


class DialectTransport(AsyncWaitClosed):
    """`inner` with its messages translated by `translator` (see :mod:`bidi_tts.dialects`)."""

    def __init__(self, inner: Transport, translator: Translator) -> None:
        self.inner = inner
        self.translator = translator
        self.knows_frame_kind = inner.knows_frame_kind
        self._ready: deque[Frame] = deque()

    async def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> None:
        for wire in self.translator.outgoing(payload, kind):
            await self.inner.send(wire.payload, kind=wire.kind)

    async def send_fragmented(self, fragments: Sequence[bytes], *, kind: FrameKind) -> None:
        wires = self.translator.outgoing(b"".join(fragments), kind)
        if _unchanged(wires, fragments):
            await self.inner.send_fragmented(fragments, kind=kind)
            return
        for wire in wires:  # the message holding the text goes fragmented, as the caller's did
            if wire.carries_text:
                await self.inner.send_fragmented(split_evenly(_as_bytes(wire.payload), len(fragments)), kind=kind)
            else:
                await self.inner.send(wire.payload, kind=wire.kind)

    async def receive(self, timeout: float | None = None) -> Frame:
        deadline = None if timeout is None else Deadline(timeout)
        while not self._ready:
            left = None if deadline is None else deadline.remaining()
            if left is not None and left <= 0:
                raise TransportTimeout(f"no frame within {timeout} s")
            self._ready.extend(self.translator.incoming(await self.inner.receive(left)))
        return self._ready.popleft()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        await self.inner.close(code, reason)

    @property
    def close_code(self) -> int | None:
        return self.inner.close_code

    def __getattr__(self, name: str) -> object:  # anything else a caller uses on its transport: the inner one's
        if name == "inner":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)


class BlockingTransport(Protocol):
    """What the blocking transports offer (the sync WebSocket, the gevent bridge to SageMaker)."""

    def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> float: ...

    def receive(self, timeout: float | None = None) -> Frame: ...

    def close(self) -> None: ...


class SyncDialectTransport(SyncWaitClosed):
    """The blocking twin (the load test's sessions): ``send`` returns when the last part left."""

    def __init__(self, inner: BlockingTransport, translator: Translator) -> None:
        self.inner = inner
        self.translator = translator
        self.knows_frame_kind = bool(getattr(inner, "knows_frame_kind", False))
        self._ready: deque[Frame] = deque()

    def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> float:
        left_at = 0.0
        for wire in self.translator.outgoing(payload, kind):
            left_at = self.inner.send(wire.payload, kind=wire.kind)
        return left_at

    def receive(self, timeout: float | None = None) -> Frame:
        deadline = None if timeout is None else Deadline(timeout)
        while not self._ready:
            left = None if deadline is None else deadline.remaining()
            if left is not None and left <= 0:
                raise TransportTimeout(f"no frame within {timeout} s")
            self._ready.extend(self.translator.incoming(self.inner.receive(left)))
        return self._ready.popleft()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> object:  # close_code, closed, ...: the inner transport's
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def _unchanged(wires: list[WireMessage], fragments: Sequence[bytes]) -> bool:
    return len(wires) == 1 and _as_bytes(wires[0].payload) == b"".join(fragments)


