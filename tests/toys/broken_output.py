"""Toy containers that answer with wrong frames or wrong audio, each breaking ONE clause."""

from __future__ import annotations

import json
from typing import Any

from starlette.websockets import WebSocket

from bidi_tts import protocol
from tests.toys.good import ToyContainer


class _Rewriting(ToyContainer):
    """Sends the good toy's frames, with control frames passed through `control(obj)`."""

    def control(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        send_text = ws.send_text

        async def rewritten(data: str) -> None:
            await send_text(json.dumps(self.control(json.loads(data))))

        ws.send_text = rewritten  # type: ignore[method-assign]
        try:
            await super().synthesize(ws, request)
        finally:
            ws.send_text = send_text  # type: ignore[method-assign]


class AudioBeforeStartToy(ToyContainer):
    """Sends the first audio frame before synthesis_start."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        chunks = [chunk async for chunk in self.synth.stream(request)]
        await ws.send_bytes(chunks[0])
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        for chunk in chunks[1:]:
            await ws.send_bytes(chunk)
        total = sum(map(len, chunks[1:]))
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class StereoClaimToy(_Rewriting):
    """synthesis_start announces 2 channels (the audio is mono)."""

    def control(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "channels": 2} if obj.get("type") == "synthesis_start" else obj


class WrongDurationToy(_Rewriting):
    """synthesis_complete's duration_s is computed at 16 kHz whatever the rate."""

    def control(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("type") == "synthesis_complete":
            return {**obj, "duration_s": round(obj["audio_bytes"] / 2 / 16_000, 3)}
        return obj


class NoEchoRequestIdToy(_Rewriting):
    """Control frames carry an id of its own, not the client's request_id."""

    def control(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "request_id": "server-chosen-id"}


class DefaultRate22050Toy(ToyContainer):
    """Without a sample_rate field it synthesizes (and announces) 22050 Hz, not 24000."""

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        message = super().parse(data)
        obj = protocol.decode_json_object(data)
        if isinstance(message, protocol.SynthesizeRequest) and "sample_rate" not in obj:
            return protocol.SynthesizeRequest(message.text, message.voice, message.speed, 22_050,
                                              message.request_id)
        return message


class RateIgnoredToy(ToyContainer):
    """Always synthesizes and announces 24000 Hz, whatever rate the client asked for."""

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        message = super().parse(data)
        if isinstance(message, protocol.SynthesizeRequest):
            return protocol.SynthesizeRequest(message.text, message.voice, message.speed,
                                              protocol.DEFAULT_SAMPLE_RATE, message.request_id)
        return message


class SpeedIgnoredToy(ToyContainer):
    """Accepts speed but always synthesizes at 1.0."""

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        message = super().parse(data)
        if isinstance(message, protocol.SynthesizeRequest):
            return protocol.SynthesizeRequest(message.text, message.voice, 1.0, message.sample_rate,
                                              message.request_id)
        return message


class NoAudioForShortTextToy(ToyContainer):
    """Its model drops utterances under 5 characters: start and complete, but no audio frame."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        if len(request.text) >= 5:
            await super().synthesize(ws, request)
            return
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        await ws.send_text(protocol.synthesis_complete(request.request_id, 0, request.sample_rate))


class AudioAsTextFramesToy(ToyContainer):
    """Sends the raw PCM in TEXT frames (each byte as a Latin-1 character): DataType=UTF8 for audio."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        total = 0
        async for chunk in self.synth.stream(request):
            await ws.send_text(chunk.decode("latin-1"))
            total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))
