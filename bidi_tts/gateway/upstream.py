"""The stand-in's WebSocket to the container, seen frame by frame, with SageMaker's keepalive rule.

- SM-FRAMES-OUT: SageMaker forwards each container data frame as its own ``PayloadPart``
  (``PARTIAL`` until the frame with FIN, then ``COMPLETE``) instead of reassembling messages, so
  :class:`FrameConnection` hands over frames, not messages.
- SM-PINGPONG: SageMaker pings every 60 s and closes after five unanswered pings.
  ``websockets``' own keepalive keeps one ping outstanding until a timeout, which is a different
  rule, so :func:`keepalive` sends a ping every interval whatever happened to the last one and
  closes once `misses` pings in a row went an interval without a pong.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode, Frame, Opcode

KEEPALIVE_CLOSE_REASON = "keepalive ping timeout"


@dataclass(frozen=True, slots=True)
class DataFrame:
    """One container data frame; `text` is the opcode of the message it belongs to."""

    data: bytes
    text: bool
    fin: bool


class FrameConnection(ClientConnection):
    """A client connection whose data frames go to :attr:`frames` as they arrive, unassembled.

    ``None`` on the queue means the connection is closed (see ``protocol.close_rcvd``/``close_sent``).
    The queue has no bound: like the uplink, the stand-in buffers what its client is slow to read.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.frames: asyncio.Queue[DataFrame | None] = asyncio.Queue()
        self._text = False  # opcode of the message being received (continuations carry none)

    def process_event(self, event: Any) -> None:
        if self.response is None or not isinstance(event, Frame):
            super().process_event(event)  # the handshake response
            return
        if event.opcode in (Opcode.TEXT, Opcode.BINARY):
            self._text = event.opcode is Opcode.TEXT
        elif event.opcode is not Opcode.CONT:
            super().process_event(event)  # control frames: pongs acknowledge our pings
            return
        self.frames.put_nowait(DataFrame(bytes(event.data), self._text, event.fin))

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.frames.put_nowait(None)


async def keepalive(ws: ClientConnection, interval_s: float, misses: int) -> None:
    """Ping every `interval_s`; close with 1011 once `misses` pings in a row went unanswered.

    A ping counts as unanswered when the next tick comes without its pong (a pong for the newest
    ping acknowledges the older ones too), so a silent container is closed ``(misses + 1) *
    interval_s`` after the connection opened: five pings at 60 s intervals, then the close."""
    unanswered = 0
    pong: asyncio.Future[float] | None = None
    try:
        while True:
            await asyncio.sleep(interval_s)
            unanswered = unanswered + 1 if pong is not None and not pong.done() else 0
            if unanswered >= misses:
                async with ws.send_context():
                    ws.protocol.fail(CloseCode.INTERNAL_ERROR, KEEPALIVE_CLOSE_REASON)
                return
            pong = await ws.ping()  # type: ignore[assignment]
    except ConnectionClosed:
        return
