"""The wire protocol of CONTRACT.md section 1, shared by the container and every client.

One definition of message schemas, error codes, close codes and limits, so the two sides cannot
drift apart. Nothing here does I/O.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

DEFAULT_VOICE = "af_heart"
DEFAULT_SAMPLE_RATE = 24_000
DEFAULT_SPEED = 1.0
ENCODING = "pcm_s16le"
CHANNELS = 1
SAMPLE_WIDTH_BYTES = 2

WS_PATH = "/invocations-bidirectional-stream"
INVOCATION_PATH_HEADER = "X-Amzn-SageMaker-Model-Invocation-Path"
QUERY_STRING_HEADER = "X-Amzn-SageMaker-Model-Query-String"
BIDI_LABEL = "com.amazonaws.sagemaker.capabilities.bidirectional-streaming"


class ErrorCode(StrEnum):
    """Stable machine words carried in `error` frames (CONTRACT.md, TTS-ERROR)."""

    INVALID_UTF8 = "invalid_utf8"
    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    TEXT_REQUIRED = "text_required"
    TEXT_TOO_LONG = "text_too_long"
    UNKNOWN_VOICE = "unknown_voice"
    BAD_SPEED = "bad_speed"
    BAD_SAMPLE_RATE = "bad_sample_rate"
    UNKNOWN_TYPE = "unknown_type"
    BAD_FORMAT = "bad_format"  # POST /invocations only: `format` is neither pcm nor wav
    BUSY = "busy"
    INTERNAL = "internal"


class CloseCode(IntEnum):
    NORMAL = 1000
    GOING_AWAY = 1001
    INVALID_PAYLOAD = 1007
    POLICY_VIOLATION = 1008
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011


class MessageType(StrEnum):
    """Client-to-container message types."""

    SYNTHESIZE = "synthesize"
    CLOSE = "close"
    CANCEL = "cancel"


class ControlType(StrEnum):
    """Container-to-client control frame types."""

    SYNTHESIS_START = "synthesis_start"
    SYNTHESIS_COMPLETE = "synthesis_complete"
    ERROR = "error"


ERROR_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.INVALID_UTF8: "The message is not valid UTF-8.",
    ErrorCode.INVALID_JSON: "The message is not valid JSON.",
    ErrorCode.NOT_AN_OBJECT: "The message must be a JSON object.",
    ErrorCode.TEXT_REQUIRED: "Field 'text' is required and must be a non-empty string.",
    ErrorCode.TEXT_TOO_LONG: "Field 'text' is longer than this container accepts.",
    ErrorCode.UNKNOWN_VOICE: "Field 'voice' names a voice this container does not have.",
    ErrorCode.BAD_SPEED: "Field 'speed' must be a finite number in the accepted range.",
    ErrorCode.BAD_SAMPLE_RATE: "Field 'sample_rate' must be one of the supported sample rates.",
    ErrorCode.UNKNOWN_TYPE: "Field 'type' must be absent, 'synthesize', 'close' or 'cancel'.",
    ErrorCode.BAD_FORMAT: "Field 'format' must be 'pcm' or 'wav'.",
    ErrorCode.BUSY: "The container is at capacity; retry later.",
    ErrorCode.INTERNAL: "The container failed to synthesize this message.",
}

SUPPORTED_SAMPLE_RATES: frozenset[int] = frozenset({8_000, 16_000, 22_050, 24_000})

# C0 controls other than tab and newline, DEL and C1 controls: never spoken, never useful to a model.
# Lone surrogates too: JSON may carry "\ud800", but no UTF-8 encoder (G2P, the WebSocket) takes it.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Limits:
    """What a container accepts. The defaults are the reference container's."""

    max_text_chars: int = 5_000
    max_message_bytes: int = 256 * 1024
    min_speed: float = 0.25
    max_speed: float = 4.0
    sample_rates: frozenset[int] = SUPPORTED_SAMPLE_RATES
    voices: frozenset[str] | None = None  # None: any syntactically valid name (clients only)
    default_voice: str = DEFAULT_VOICE  # the voice of a message that names none


class ProtocolError(Exception):
    """A client message the container must refuse, with its stable code.

    `close_code` is set when the error is fatal for the session (CONTRACT.md TTS-ERROR).
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str | None = None,
        *,
        request_id: str | None = None,
        close_code: CloseCode | None = None,
    ) -> None:
        self.code = code
        self.message = message or ERROR_MESSAGES[code]
        self.request_id = request_id
        self.close_code = close_code
        super().__init__(f"{code}: {self.message}")


@dataclass(frozen=True, slots=True)
class SynthesizeRequest:
    text: str
    voice: str = DEFAULT_VOICE
    speed: float = DEFAULT_SPEED
    sample_rate: int = DEFAULT_SAMPLE_RATE
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def to_json(self) -> str:
        return json.dumps(
            {
                "type": MessageType.SYNTHESIZE.value,
                "text": self.text,
                "voice": self.voice,
                "speed": self.speed,
                "sample_rate": self.sample_rate,
                "request_id": self.request_id,
            },
            ensure_ascii=False,
        )


@dataclass(frozen=True, slots=True)
class CloseRequest:
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class CancelRequest:
    request_id: str | None = None


ClientMessage = SynthesizeRequest | CloseRequest | CancelRequest

_VOICE_NAME = re.compile(r"[a-z]{2}_[a-z0-9]{1,32}")


def is_voice_name(name: object) -> bool:
    """True for a syntactically valid voice name (``af_heart``): two letters, ``_``, up to 32 more."""
    return isinstance(name, str) and _VOICE_NAME.fullmatch(name) is not None


def _request_id_of(obj: dict[str, Any]) -> str | None:
    value = obj.get("request_id")
    if isinstance(value, str) and 0 < len(value) <= 256 and not _SURROGATES.search(value):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def decode_json_object(data: bytes | str) -> dict[str, Any]:
    """Decode one client message to a JSON object or raise the coded ProtocolError."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(ErrorCode.INVALID_UTF8) from None
    else:
        text = data
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise ProtocolError(ErrorCode.INVALID_JSON) from None
    if not isinstance(value, dict):
        raise ProtocolError(ErrorCode.NOT_AN_OBJECT)
    return value


def clean_text(text: str) -> str:
    """Drop control characters that a speech model cannot speak."""
    return _CONTROL_CHARS.sub(" ", text)


def parse_client_message(data: bytes | str, limits: Limits | None = None) -> ClientMessage:
    """Parse and validate one client message (TEXT or BINARY frame alike: TTS-BINARY-IN)."""
    limits = limits or Limits()
    obj = decode_json_object(data)
    request_id = _request_id_of(obj)

    def fail(code: ErrorCode, message: str | None = None) -> ProtocolError:
        return ProtocolError(code, message, request_id=request_id)

    kind = obj.get("type", MessageType.SYNTHESIZE.value)
    if kind == MessageType.CLOSE:
        return CloseRequest(request_id)
    if kind == MessageType.CANCEL:
        return CancelRequest(request_id)
    if kind != MessageType.SYNTHESIZE:
        raise fail(ErrorCode.UNKNOWN_TYPE)

    text = obj.get("text")
    if not isinstance(text, str) or not clean_text(text).strip():
        raise fail(ErrorCode.TEXT_REQUIRED)
    if len(text) > limits.max_text_chars:
        raise fail(
            ErrorCode.TEXT_TOO_LONG,
            f"Field 'text' has {len(text)} characters; this container accepts at most "
            f"{limits.max_text_chars}.",
        )

    voice = obj.get("voice")
    if voice is None:
        voice = limits.default_voice
    if not isinstance(voice, str) or not is_voice_name(voice):
        raise fail(ErrorCode.UNKNOWN_VOICE)
    if limits.voices is not None and voice not in limits.voices:
        raise fail(ErrorCode.UNKNOWN_VOICE, f"Unknown voice {voice!r}; see the container's voice list.")

    speed = obj.get("speed", DEFAULT_SPEED)
    if speed is None:
        speed = DEFAULT_SPEED
    if (
        isinstance(speed, bool)
        or not isinstance(speed, (int, float))
        # abs() first: math.isfinite() raises OverflowError on ints beyond the float range.
        or (isinstance(speed, int) and abs(speed) > limits.max_speed)
        or not math.isfinite(speed)
        or not limits.min_speed <= speed <= limits.max_speed
    ):
        raise fail(
            ErrorCode.BAD_SPEED,
            f"Field 'speed' must be a finite number from {limits.min_speed} to {limits.max_speed}.",
        )

    rate = obj.get("sample_rate", DEFAULT_SAMPLE_RATE)
    if rate is None:
        rate = DEFAULT_SAMPLE_RATE
    if isinstance(rate, float) and rate.is_integer():
        rate = int(rate)
    if isinstance(rate, bool) or not isinstance(rate, int) or rate not in limits.sample_rates:
        supported = ", ".join(str(r) for r in sorted(limits.sample_rates))
        raise fail(ErrorCode.BAD_SAMPLE_RATE, f"Field 'sample_rate' must be one of {supported} Hz.")

    return SynthesizeRequest(
        text=clean_text(text).strip(),
        voice=voice,
        speed=float(speed),
        sample_rate=rate,
        request_id=request_id or uuid.uuid4().hex,
    )


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def synthesis_start(request_id: str, sample_rate: int) -> str:
    return _dumps(
        {
            "type": ControlType.SYNTHESIS_START.value,
            "request_id": request_id,
            "sample_rate": sample_rate,
            "encoding": ENCODING,
            "channels": CHANNELS,
        }
    )


def synthesis_complete(
    request_id: str, audio_bytes: int, sample_rate: int, *, cancelled: bool = False
) -> str:
    body: dict[str, Any] = {
        "type": ControlType.SYNTHESIS_COMPLETE.value,
        "request_id": request_id,
        "audio_bytes": audio_bytes,
        "duration_s": round(audio_bytes / (SAMPLE_WIDTH_BYTES * CHANNELS * sample_rate), 6),
    }
    if cancelled:
        body["cancelled"] = True
    return _dumps(body)


def error_frame(code: ErrorCode, message: str | None = None, request_id: str | None = None) -> str:
    return _dumps(
        {
            "type": ControlType.ERROR.value,
            "request_id": request_id,
            "code": code.value,
            "message": message or ERROR_MESSAGES[code],
        }
    )


def error_from(exc: ProtocolError) -> str:
    return error_frame(exc.code, exc.message, exc.request_id)
