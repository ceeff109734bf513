"""Toy containers whose WebSocket stack differs from Starlette's at the frame level, for the
SageMaker stand-in's platform rules (bidi_tts.gateway.upstream):

- :class:`FragmentingToy` writes every message, control and audio, as several frames (a TEXT or
  BINARY frame, then continuations, the last with FIN), split at odd byte offsets, as a container
  on a frame-level WebSocket API may; SageMaker forwards each frame as its own PayloadPart.
- :class:`DeafToy` never answers pings (its stack drops the pongs RFC 6455 requires), and counts
  the pings it received.
"""

from __future__ import annotations

import itertools
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import Frame, Opcode

from tests.toys.raw_frames import FrameSocket, RawFramesToy


def split_points(size: int, parts: int) -> list[int]:
    """Odd cut offsets (so a PCM sample straddles two frames) splitting `size` bytes in `parts`."""
    cuts = sorted({(size * k // parts) | 1 for k in range(1, parts)})
    return [c for c in cuts if 0 < c < size]


class FragmentingSocket(FrameSocket):
    """Sends each message as `parts` frames where it is long enough, one frame otherwise."""

    parts = 3

    async def _send(self, data: bytes, text: bool) -> None:
        cuts = [0, *split_points(len(data), self.parts), len(data)]
        pieces = [data[a:b] for a, b in itertools.pairwise(cuts)]
        proto = self.connection.protocol
        async with self.connection.send_context():
            for index, piece in enumerate(pieces):
                fin = index == len(pieces) - 1
                if index:
                    proto.send_continuation(piece, fin=fin)
                elif text:
                    proto.send_text(piece, fin=fin)
                else:
                    proto.send_binary(piece, fin=fin)

    async def send_text(self, data: str) -> None:
        await self._send(data.encode("utf-8"), text=True)

    async def send_bytes(self, data: bytes) -> None:
        await self._send(bytes(data), text=False)


class FragmentingToy(RawFramesToy):
    """A correct container, except that it fragments every message it sends into three frames."""

    socket_class = FragmentingSocket


class DeafToy(RawFramesToy):
    """A correct container that never answers a ping; :attr:`pings` counts those it received."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pings = 0

    async def handle(self, connection: ServerConnection) -> None:
        send_frame = connection.protocol.send_frame

        def drop_pongs(frame: Frame) -> None:
            if frame.opcode is Opcode.PONG:  # the automatic answer to a ping: count it, send nothing
                self.pings += 1
                return
            send_frame(frame)

        connection.protocol.send_frame = drop_pongs  # type: ignore[method-assign]
        await super().handle(connection)
