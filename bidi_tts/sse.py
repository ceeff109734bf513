"""Server-sent events: a WHATWG EventSource decoder, base64 audio events, and an encoder.

:class:`SSEDecoder` follows the "Interpreting an event stream" rules of the HTML standard
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):

- the byte stream is decoded as UTF-8 (invalid bytes become U+FFFD; a character split across two
  deliveries is decoded whole) and one leading byte order mark is ignored, even when split;
- lines end with CRLF, LF or CR; a CR that ends one delivery and an LF that starts the next are
  one line end, not two;
- a line starting with ``:`` is a comment; ``field: value`` loses exactly one space after the
  colon; a line without a colon is a field with an empty value; unknown fields are ignored;
- ``data`` lines are joined with ``\\n``; an empty line dispatches the event; an event whose data
  buffer is empty is not dispatched; the type defaults to ``message``;
- ``id`` sets the last event id, which persists across events, unless the value contains NUL;
- ``retry`` is honoured only when it is all ASCII digits.

The decoder is incremental and linear: each delivered byte is decoded and scanned once; a line
that arrives in many pieces is kept as a list of pieces and joined once when it ends.

The encoder (:func:`encode_event`) is the other direction, for a relay that re-serves audio as SSE.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "SSEAudioError",
    "SSEDecoder",
    "SSEEvent",
    "decode_audio_events",
    "encode_event",
]

_LINE_END = re.compile(r"\r\n|\r|\n")
_ASCII_DIGITS = re.compile(r"[0-9]+")
_BASE64_WHITESPACE = re.compile(r"[\s]+")

#: The event type that carries base64 audio in its data (see :func:`decode_audio_events`).
AUDIO_EVENT = "audio"
#: The JSON key that carries base64 audio when the data is a JSON object.
AUDIO_KEY = "audio"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event.

    ``id`` is the last event id in force when the event was dispatched ("" until the stream sets
    one); ``retry`` is the reconnection time in milliseconds when the event's own block carried a
    valid ``retry`` field, else None.
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None


class SSEDecoder:
    """Incremental WHATWG event-stream decoder: bytes in, complete events out.

    Call :meth:`feed` with each delivery as it arrives, in order, and :meth:`close` at the end of
    the stream (it dispatches nothing, see there). After ``close`` the decoder refuses more input.
    """

    def __init__(self) -> None:
        self._undecoded = b""  # the start of a UTF-8 sequence split across deliveries
        self._at_start = True  # no character decoded yet: a BOM now is dropped
        self._line_parts: list[str] = []  # the current, unterminated line, in pieces
        self._skip_lf = False  # the previous delivery ended with CR: an LF now is part of that line end
        self._data: list[str] = []  # data lines of the event being built
        self._event_type = ""
        self._event_retry: int | None = None
        self._id_buffer = ""  # the "last event ID buffer"
        self._closed = False
        #: The last event id string, persisting across events ("" until set).
        self.last_event_id = ""
        #: The reconnection time in milliseconds from the last valid ``retry`` field, else None.
        self.retry: int | None = None
        #: Set by :meth:`close`: True when the stream ended inside an event (input discarded).
        self.truncated = False

    @property
    def in_event(self) -> bool:
        """True when input since the last dispatch would be lost if the stream ended now."""
        return bool(self._line_parts) or bool(self._data) or bool(self._event_type)

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Decode one delivery of bytes; return the events it completes, in order."""
        if self._closed:
            raise ValueError("SSEDecoder.feed() after close()")
        text = self._decode(bytes(data))
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return []
        if "\n" not in text and "\r" not in text:
            self._line_parts.append(text)
            return []
        events: list[SSEEvent] = []
        pieces = _LINE_END.split(text)
        tail = pieces.pop()  # after the last line end: the start of the next line, maybe ""
        first = pieces[0]
        if self._line_parts:
            self._line_parts.append(first)
            first = "".join(self._line_parts)
            self._line_parts = []
        self._process_line(first, events)
        for line in pieces[1:]:
            self._process_line(line, events)
        if tail:
            self._line_parts.append(tail)
        elif text[-1] == "\r":
            self._skip_lf = True
        return events

    def close(self) -> list[SSEEvent]:
        """End the stream; returns the events it completes, which per the standard is none.

        An event not yet terminated by an empty line is discarded, never dispatched (WHATWG: "If
        the file ends in the middle of an event, before the final empty line, the incomplete event
        is not dispatched"). :attr:`truncated` then says whether anything was discarded, so a
        caller can report a cut stream. ``close`` is idempotent; ``feed`` after it raises.
        """
        if not self._closed:
            self._closed = True
            self.truncated = self.in_event or bool(self._undecoded)
            self._undecoded = b""
            self._line_parts, self._data, self._event_type = [], [], ""
        return []

    def _decode(self, data: bytes) -> str:
        # codecs.utf_8_decode keeps an incomplete trailing sequence for the next delivery and
        # replaces invalid bytes with U+FFFD; pure ASCII (the common case) skips it.
        if not self._undecoded and data.isascii():
            text = data.decode("ascii")
        else:
            data = self._undecoded + data
            text, used = codecs.utf_8_decode(data, "replace", False)
            self._undecoded = data[used:]
        if self._at_start and text:
            self._at_start = False
            if text[0] == "\ufeff":
                text = text[1:]
        return text

    # -- the standard's line and dispatch steps ----------------------------------------------------
    def _process_line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self._id_buffer = value
        elif name == "retry":
            if _ASCII_DIGITS.fullmatch(value):
                self.retry = self._event_retry = int(value)

    def _dispatch(self, events: list[SSEEvent]) -> None:
        self.last_event_id = self._id_buffer
        data, event_type, retry = self._data, self._event_type, self._event_retry
        self._data, self._event_type, self._event_retry = [], "", None
        if not data:
            return
        events.append(SSEEvent(event_type or "message", "\n".join(data), self.last_event_id, retry))


class SSEAudioError(ValueError):
    """An audio event whose payload is not valid base64."""


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(_BASE64_WHITESPACE.sub("", text), validate=True)
    except (binascii.Error, ValueError):
        raise SSEAudioError("an audio event does not carry valid base64") from None


def _audio_of(event: SSEEvent) -> str | None:
    """The base64 audio text an event carries, or None when it carries none."""
    data = event.data.strip()
    if data.startswith("{"):
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            value = obj.get(AUDIO_KEY)
            return value if isinstance(value, str) else None
    if event.event == AUDIO_EVENT:
        return data
    return None


def decode_audio_events(events: Iterable[SSEEvent]) -> bytes:
    """Concatenate the PCM carried by base64 audio events, in order.

    Two shapes carry audio, and both are accepted:

    - an event of type ``audio`` whose data is the base64 text itself;
    - an event of any type whose data is a JSON object with a string ``audio`` key holding base64
      (the shape of the seeds' streaming samples: ``data: {"audio": "UklG..."}``).

    Other events (progress, ``done``, ``[DONE]`` sentinels, JSON without ``audio``) carry no
    audio and are skipped. Whitespace inside base64 (multi-line data) is ignored.

    Raises :class:`SSEAudioError` when an audio payload is not valid base64.
    """
    out = bytearray()
    for event in events:
        text = _audio_of(event)
        if text is not None:
            out += _b64decode(text)
    return bytes(out)


def _check_field(name: str, value: str) -> None:
    if "\r" in value or "\n" in value:
        raise ValueError(f"SSE {name} must not contain CR or LF")


def encode_event(
    data: str | bytes,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """Serialise one event as UTF-8 bytes, ending with the empty line that dispatches it.

    Multi-line ``data`` (any of CRLF, CR, LF) becomes one ``data:`` line per line, so the decoder
    gives back the same text with ``\\n`` line ends. ``bytes`` data is sent as base64 (an audio
    payload). ``event`` and ``id`` must not contain CR or LF, ``id`` not NUL (a decoder would
    ignore it); ``retry`` must be a non-negative integer. Raises ValueError otherwise.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = base64.b64encode(bytes(data)).decode("ascii")
    out: list[str] = []
    if event is not None:
        _check_field("event", event)
        out.append(f"event: {event}\n")
    if id is not None:
        _check_field("id", id)
        if "\0" in id:
            raise ValueError("SSE id must not contain NUL")
        out.append(f"id: {id}\n")
    if retry is not None:
        if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
            raise ValueError("SSE retry must be a non-negative integer (milliseconds)")
        out.append(f"retry: {retry}\n")
    out.extend(f"data: {line}\n" for line in _LINE_END.split(data))
    out.append("\n")
    return "".join(out).encode("utf-8")
