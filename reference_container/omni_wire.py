"""vLLM-Omni's streaming speech dialect on the wire (`/v1/audio/speech/stream`): client messages parsed and
checked, server frames built.

The shape follows vLLM-Omni's handler (vllm_omni/entrypoints/openai/serving_speech_stream.py, its
StreamingSpeechSessionConfig in protocol/audio.py): `session.config`, `input.text`, `input.done` (a
flush: the connection stays open), `session.close`; the server answers `audio.start`, binary audio,
`audio.done` per sentence and `session.done` per flush, and `{"type": "error", "message"}`. Our error
frames add a stable `code` word (the kokoro dialect's where one fits) that vLLM-Omni does not send.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from bidi_tts import protocol

PATH = "/v1/audio/speech/stream"
INVOCATION_PATH = PATH.lstrip("/")  # the value of X-Amzn-SageMaker-Model-Invocation-Path that selects it
SAMPLE_RATE = protocol.DEFAULT_SAMPLE_RATE  # model-native, as vLLM-Omni streams it
MIN_SPEED, MAX_SPEED = 0.25, 4.0  # StreamingSpeechSessionConfig.speed: ge=0.25, le=4.0
FORMATS = ("pcm", "wav")  # vLLM-Omni also names flac, mp3, aac, opus: not served here
GRANULARITIES = ("none", "sentence", "clause")

Format = Literal["pcm", "wav"]
Granularity = Literal["none", "sentence", "clause"]


class OmniError(Exception):
    """A client message this dialect rejects: answered with an error frame, the session goes on."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class SessionConfig:
    voice: str
    speed: float = 1.0
    response_format: Format = "wav"
    stream_audio: bool = False
    split_granularity: Granularity = "none"


@dataclass(frozen=True, slots=True)
class InputText:
    text: str


@dataclass(frozen=True, slots=True)
class InputDone:
    pass


@dataclass(frozen=True, slots=True)
class SessionClose:
    pass


OmniMessage = SessionConfig | InputText | InputDone | SessionClose


def parse(data: bytes | str, limits: protocol.Limits) -> OmniMessage:
    """One client message from a TEXT or a BINARY frame alike (SageMaker sends BINARY)."""
    try:
        obj = protocol.decode_json_object(data)
    except protocol.ProtocolError as exc:
        raise OmniError(exc.code.value, {
            protocol.ErrorCode.INVALID_UTF8: "Message is not valid UTF-8",
            protocol.ErrorCode.INVALID_JSON: "Invalid JSON message",
        }.get(exc.code, "WebSocket messages must be JSON objects")) from None
    kind = obj.get("type")
    if kind == "session.config":
        return _config(obj, limits)
    if kind == "input.text":
        text = obj.get("text", "")
        if not isinstance(text, str):
            raise OmniError(protocol.ErrorCode.TEXT_REQUIRED.value, "input.text requires a string value")
        return InputText(protocol.clean_text(text))
    if kind == "input.done":
        return InputDone()
    if kind == "session.close":
        return SessionClose()
    raise OmniError(protocol.ErrorCode.UNKNOWN_TYPE.value, f"Unknown message type: {_shown(kind)}")


def _config(obj: dict[str, Any], limits: protocol.Limits) -> SessionConfig:
    def bad(code: protocol.ErrorCode | str, why: str) -> OmniError:
        return OmniError(str(code), f"Invalid session config: {why}")

    voice = obj.get("voice")
    if voice is None:
        voice = limits.default_voice
    if not isinstance(voice, str) or (limits.voices is not None and voice not in limits.voices):
        raise bad(protocol.ErrorCode.UNKNOWN_VOICE, f"unknown voice {_shown(voice)}; see GET /voices")
    speed = obj.get("speed", 1.0)
    if speed is None:
        speed = 1.0
    if (isinstance(speed, bool) or not isinstance(speed, (int, float))
            or (isinstance(speed, int) and abs(speed) > MAX_SPEED) or not math.isfinite(speed)
            or not MIN_SPEED <= speed <= MAX_SPEED):
        raise bad(protocol.ErrorCode.BAD_SPEED, f"speed must be a number from {MIN_SPEED} to {MAX_SPEED}")
    fmt = obj.get("response_format", "wav")
    if fmt not in FORMATS:
        raise bad(protocol.ErrorCode.BAD_FORMAT, f"response_format {_shown(fmt)} is not served; use pcm or wav")
    stream = obj.get("stream_audio", False)
    if not isinstance(stream, bool):
        raise bad("bad_config", "stream_audio must be true or false")
    granularity = obj.get("split_granularity", "none")
    if granularity not in GRANULARITIES:
        raise bad("bad_config", "split_granularity must be none, sentence or clause")
    return SessionConfig(voice=voice, speed=float(speed), response_format=fmt, stream_audio=stream,
                         split_granularity=granularity)


def _shown(value: object) -> str:
    """A client's value in an error message, cut short."""
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def audio_start(config: SessionConfig, utterance: int, sentence: int, text: str) -> str:
    body: dict[str, Any] = {"type": "audio.start", "utterance_index": utterance, "sentence_index": sentence,
                            "sentence_text": text, "format": config.response_format}
    if config.response_format == "pcm":
        body.update(sample_rate=SAMPLE_RATE, channels=protocol.CHANNELS)
    return _dumps(body)


def audio_done(utterance: int, sentence: int, total_bytes: int, *, failed: bool = False) -> str:
    return _dumps({"type": "audio.done", "utterance_index": utterance, "sentence_index": sentence,
                   "total_bytes": total_bytes, "error": failed})


def session_done(utterance: int, total_sentences: int) -> str:
    return _dumps({"type": "session.done", "utterance_index": utterance, "total_sentences": total_sentences})


def error(code: str, message: str) -> str:
    return _dumps({"type": "error", "code": code, "message": message})


def wav_header(sample_rate: int, data_bytes: int | None) -> bytes:
    """A PCM s16le mono WAV header; `data_bytes` None: sizes unknown (0xFFFFFFFF), for a stream."""
    data = 0xFFFFFFFF if data_bytes is None else data_bytes
    riff = 0xFFFFFFFF if data_bytes is None else 36 + data_bytes
    return (b"RIFF" + riff.to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
            + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + sample_rate.to_bytes(4, "little")
            + (sample_rate * 2).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
            + b"data" + data.to_bytes(4, "little"))
