"""Toy containers that read or validate client messages wrongly, each breaking ONE clause.

Most rewrite the decoded JSON object before the good toy's validation runs (what a looser
validator would have let through), or change the container's limits.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.websockets import WebSocket

from bidi_tts import protocol
from tests.toys.good import ToyContainer, ToySynthesizer


class _Rewriting(ToyContainer):
    """Validates `rewrite(obj)` instead of the message the client sent."""

    def rewrite(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        obj = protocol.decode_json_object(data)
        return protocol.parse_client_message(json.dumps(self.rewrite(obj)), self.limits)


class BinaryOnlyToy(ToyContainer):
    """Reads every message with receive_bytes(): a TEXT frame raises KeyError('bytes')."""

    async def receive_message(self, ws: WebSocket) -> bytes | str | None:
        return await ws.receive_bytes()


class RepairsTruncatedJsonToy(ToyContainer):
    """'Repairs' JSON cut short by closing the string and the object, then synthesizes it."""

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        try:
            json.loads(text)
        except ValueError:
            if text.startswith("{"):
                for tail in ('"}', "}", ""):
                    try:
                        return super().parse(text + tail)
                    except protocol.ProtocolError:
                        continue
        return super().parse(data)


class _CatchAll(ToyContainer):
    """A catch-all handler: an unexpected exception ends the session with 1011 (internal error)."""

    async def websocket(self, ws: WebSocket) -> None:
        try:
            await super().websocket(ws)
        except Exception:
            await ws.close(protocol.CloseCode.INTERNAL_ERROR)


class RecursionCrashToy(_CatchAll):
    """Catches only ValueError around json.loads: deep nesting raises RecursionError, which ends
    the session (1011)."""

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        try:
            json.loads(data)
        except ValueError:
            pass  # the good parser answers it; RecursionError escapes
        return super().parse(data)


class NotAnObjectAsInvalidJsonToy(_Rewriting):
    """Answers JSON that is not an object with invalid_json (the code of a different cause)."""

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        try:
            return super().parse(data)
        except protocol.ProtocolError as exc:
            if exc.code is protocol.ErrorCode.NOT_AN_OBJECT:
                raise protocol.ProtocolError(protocol.ErrorCode.INVALID_JSON) from None
            raise


class LooseTypesToy(_Rewriting):
    """Coerces field types instead of refusing them: text=42 -> "42", voice=["af_heart"] -> its first
    item, speed="1.0" -> 1.0, sample_rate="24000" -> 24000."""

    def rewrite(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj = dict(obj)
        if "text" in obj and obj["text"] is not None and not isinstance(obj["text"], str):
            obj["text"] = str(obj["text"])
        if isinstance(obj.get("voice"), list) and obj["voice"]:
            obj["voice"] = obj["voice"][0]
        for name, kind in (("speed", float), ("sample_rate", int)):
            value = obj.get(name)
            if isinstance(value, str | bool):
                try:
                    obj[name] = kind(value)
                except ValueError:
                    pass
        return obj


class UncheckedTypeToy(_Rewriting):
    """Looks only for type == "close"/"cancel"; any other type (or a non-string one) is synthesized."""

    def rewrite(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("type") not in ("close", "cancel"):
            obj = {k: v for k, v in obj.items() if k != "type"}
        return obj


class WhitespaceTextToy(_Rewriting):
    """Checks `if not text` only: whitespace-only text is synthesized (as a pause)."""

    def rewrite(self, obj: dict[str, Any]) -> dict[str, Any]:
        text = obj.get("text")
        if isinstance(text, str) and text and not text.strip():
            obj = {**obj, "text": "(pause)"}
        return obj


class ControlCharCrashToy(_CatchAll):
    """Its phonemizer dies on a NUL character: the exception ends the session (1011)."""

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        obj = protocol.decode_json_object(data)
        if isinstance(obj.get("text"), str) and "\x00" in obj["text"]:
            raise RuntimeError("phonemizer crashed on a NUL character")
        return super().parse(data)


class CappedSynthesizer(ToySynthesizer):
    """A model that truncates each sentence to a few seconds of audio (Kokoro stops at 510 tokens)."""

    async def stream(self, request: protocol.SynthesizeRequest):  # type: ignore[no-untyped-def]
        capped = request.text if len(request.text) <= 200 else request.text[:200]
        async for chunk in super().stream(protocol.SynthesizeRequest(
                capped, request.voice, request.speed, request.sample_rate, request.request_id)):
            yield chunk


class NoTextLimitToy(ToyContainer):
    """No limit on text or message size (up to the WebSocket's 16 MB): 2 MB of text is synthesized."""

    def __init__(self) -> None:
        super().__init__()
        self.limits = protocol.Limits(max_text_chars=10**9, max_message_bytes=10**9, voices=self.config.voices)
        self.synth = CappedSynthesizer(self.config)


class SmallTextLimitToy(ToyContainer):
    """Refuses text over 500 characters (the contract says at least 1,000 must be accepted)."""

    def __init__(self) -> None:
        super().__init__()
        self.limits = protocol.Limits(max_text_chars=500, voices=self.config.voices)


class StrictFieldsToy(ToyContainer):
    """Refuses messages with fields it does not know (request_timestamp from the sample's client)."""

    KNOWN = frozenset({"type", "text", "voice", "speed", "sample_rate", "request_id"})

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        obj = protocol.decode_json_object(data)
        unknown = sorted(set(obj) - self.KNOWN)
        if unknown:
            raise protocol.ProtocolError(protocol.ErrorCode.INVALID_JSON, f"Unknown field {unknown[0]!r}.")
        return super().parse(data)


class AsciiOnlyToy(ToyContainer):
    """Its text front end encodes to ASCII: any non-ASCII character fails the message ('internal')."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        try:
            request.text.encode("ascii")
        except UnicodeEncodeError:
            await ws.send_text(protocol.error_from(protocol.ProtocolError(
                protocol.ErrorCode.INTERNAL, request_id=request.request_id)))
            return
        await super().synthesize(ws, request)


class PositiveSpeedOnlyToy(_Rewriting):
    """Checks only `speed > 0`: Infinity, 11 and 1e308 are synthesized."""

    def rewrite(self, obj: dict[str, Any]) -> dict[str, Any]:
        speed = obj.get("speed")
        if isinstance(speed, int | float) and not isinstance(speed, bool) and speed > 0:
            obj = {**obj, "speed": min(float(speed), 4.0)}
        return obj


class NarrowSpeedToy(ToyContainer):
    """Accepts speeds from 0.8 to 1.5 only (the contract says 0.5 to 2.0 must be accepted)."""

    def __init__(self) -> None:
        super().__init__()
        self.limits = protocol.Limits(min_speed=0.8, max_speed=1.5, voices=self.config.voices)


class AnyRateToy(ToyContainer):
    """Accepts any positive integer sample rate (12345 Hz included) and synthesizes at it."""

    def __init__(self) -> None:
        super().__init__()
        self.limits = protocol.Limits(sample_rates=frozenset(range(1, 200_000)), voices=self.config.voices)
