"""Thin I/O layers under the sans-I/O core. See :mod:`bidi_tts.transports.base` for the seam."""

from bidi_tts.frames import Frame
from bidi_tts.transports.base import (
    ConnectError,
    Transport,
    TransportClosed,
    TransportError,
    TransportTimeout,
)

__all__ = [
    "ConnectError",
    "Frame",
    "Transport",
    "TransportClosed",
    "TransportError",
    "TransportTimeout",
]
