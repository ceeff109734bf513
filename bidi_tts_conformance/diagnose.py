"""Words for what a container did, for failure details a person can act on (no Python reprs)."""

from __future__ import annotations

import ast
import json

from bidi_tts.frames import FrameKind
from bidi_tts.session import ProtocolViolation
from bidi_tts.transports.base import ConnectError, TransportClosed

_CLOSE_MEANING = {
    1000: "normal closure",
    1001: "going away",
    1002: "protocol error",
    1003: "unsupported data",
    1006: "abnormal closure: the connection dropped without a close frame",
    1007: "invalid payload data",
    1008: "policy violation",
    1009: "message too big",
    1011: "internal error",
}


def describe_close(closed: TransportClosed) -> str:
    """'closed the session with 1011 (internal error, reason "boom")' and the like."""
    if closed.code is None or closed.code == 1006:
        return "dropped the connection without a close frame (1006)"
    meaning = _CLOSE_MEANING.get(closed.code, "")
    reason = f', reason "{closed.reason}"' if closed.reason else ""
    inside = f" ({meaning}{reason})" if meaning or reason else ""
    return f"closed the session with {closed.code}{inside}"


def describe_connect_error(exc: ConnectError) -> str:
    """Why no session could be opened, in words."""
    if exc.status is not None:
        hint = " (no WebSocket route at that path?)" if exc.status == 404 else ""
        return f"the server answered HTTP {exc.status} to the WebSocket handshake{hint}"
    return str(exc)


def describe_frame(payload: bytes, kind: FrameKind | None) -> str:
    """A short human description of a frame for failure details."""
    label = kind.value.upper() if kind else "FRAME"
    try:
        obj = json.loads(payload.decode("utf-8"))
        if isinstance(obj, dict):
            shown = {k: obj[k] for k in list(obj)[:5]}
            text = json.dumps(shown, ensure_ascii=False)
            return f"{label} {text[:160]}"
    except (UnicodeDecodeError, ValueError):
        pass
    return f"{label} {len(payload)} bytes"


def worded(violation: ProtocolViolation) -> str:
    """The session checker's description for people: frames as JSON (as everywhere else in the
    report), not as Python dicts; a missing field said as missing, not as None."""
    text = violation.description.replace("sample_rate: None", "sample_rate (it has none)")
    head, sep, tail = text.partition(": {")
    if sep:
        try:
            value = ast.literal_eval("{" + tail)
        except (ValueError, SyntaxError):
            return text
        return f"{head}: {json.dumps(value, ensure_ascii=False)}"
    return text
