"""Frames from the container and the JSON-vs-PCM rule (CONTRACT.md TTS-CLASSIFY).

A frame is control only if the whole frame decodes as UTF-8 JSON whose value is an object. Raw PCM
may start with `{` (0x7b), so a prefix test is never enough. When the transport knows the frame's
kind (WebSocket opcode, SageMaker `DataType`), that knowledge wins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class FrameKind(StrEnum):
    """What the transport says a frame is: a WebSocket opcode or a SageMaker DataType."""

    TEXT = "text"  # WebSocket TEXT opcode; SageMaker DataType=UTF8
    BINARY = "binary"  # WebSocket BINARY opcode; SageMaker DataType=BINARY


def decode_control_frame(chunk: bytes | str) -> dict[str, Any] | None:
    """Return the control object if the whole chunk is a UTF-8 JSON object, else None (audio)."""
    if isinstance(chunk, str):
        text = chunk
    else:
        raw = bytes(chunk)
        # Cheap rejection first: a JSON object starts with optional whitespace then '{'.
        stripped = raw.lstrip(b" \t\r\n")
        if not stripped.startswith(b"{") or not raw.rstrip(b" \t\r\n").endswith(b"}"):
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class FrameClass(StrEnum):
    CONTROL = "control"
    AUDIO = "audio"
    INVALID = "invalid"  # a TEXT frame (by opcode or DataType) that is not a JSON object


def classify_frame(
    chunk: bytes | str, kind: FrameKind | None = None
) -> tuple[FrameClass, dict[str, Any] | None]:
    """Classify a frame, preferring the transport's own knowledge of its kind.

    - kind BINARY: audio, even if the bytes happen to decode as a JSON object.
    - kind TEXT: control if it is a JSON object, else INVALID (audio never travels as TEXT).
    - kind None (the transport cannot tell): the strict rule of :func:`decode_control_frame`.
    """
    if kind is FrameKind.BINARY:
        return FrameClass.AUDIO, None
    control = decode_control_frame(chunk)
    if control is not None:
        return FrameClass.CONTROL, control
    if kind is FrameKind.TEXT:
        return FrameClass.INVALID, None
    return FrameClass.AUDIO, None


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame from the container: its bytes, its kind when the transport knows it, and when it
    arrived, in the caller's clock (the transport stamps it; the core never reads a clock)."""

    payload: bytes
    kind: FrameKind | None  # None when the transport cannot tell TEXT from BINARY
    received_at: float

    def classify(self) -> tuple[FrameClass, dict[str, Any] | None]:
        return classify_frame(self.payload, self.kind)
