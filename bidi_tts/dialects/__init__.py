"""Dialects: which application protocol a session speaks on the wire (docs/dialects.md).

Cases, load-test users and ladders hold one conversation (say this text, close; hear start, audio,
end, error) in the kokoro-sample protocol of CONTRACT.md; a dialect's :class:`Translator` maps it to
its own wire and back. Sans-I/O: no sockets here (the transport wrapper is
:mod:`bidi_tts.transports.dialect`).
"""

from bidi_tts.dialects.base import Dialect, DialectUnsupported, Translator, WireMessage
from bidi_tts.dialects.registry import (
    DEFAULT_DIALECT,
    DIALECTS,
    BadRoute,
    UnknownDialect,
    dialect_at,
    dialect_named,
)

__all__ = ["DEFAULT_DIALECT", "DIALECTS", "BadRoute", "Dialect", "DialectUnsupported", "Translator", "UnknownDialect",
           "WireMessage", "dialect_at", "dialect_named"]
