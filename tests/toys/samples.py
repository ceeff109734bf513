"""Toys shaped like real containers seen in the wild, with the defects the issue reports: the AWS
post's sample (one global lock, no sample_rate in synthesis_start) and a runaway that accepts any
text and keeps synthesizing after its client has gone."""

from __future__ import annotations

import asyncio
import json

from starlette.websockets import WebSocket

from bidi_tts import protocol
from tests.toys.good import ToyConfig, ToyContainer, tone


class SampleLikeToy(ToyContainer):
    """The AWS post's serve.py shape: every session behind one asyncio.Lock, and a synthesis_start
    without sample_rate (TTS-AUDIO), so a second session's "Hi." waits for the first one's paragraph."""

    def __init__(self, config: ToyConfig | None = None) -> None:
        super().__init__(config or ToyConfig(first_audio_delay_s=0.2))
        self.model = asyncio.Lock()

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        async with self.model:
            start = json.loads(protocol.synthesis_start(request.request_id, request.sample_rate))
            del start["sample_rate"]
            await ws.send_text(json.dumps(start))
            total = 0
            async for chunk in self.synth.stream(request):
                await ws.send_bytes(chunk)
                total += len(chunk)
            await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class RunawayToy(ToyContainer):
    """Accepts text of any length and, once a message has started, synthesizes all of it behind one
    global lock even after its client has gone: after robust.text.3 the container stays busy for
    about 40 s (2,000 pieces of 100 characters, 20 ms each)."""

    PIECE_CHARS = 100

    def __init__(self) -> None:
        super().__init__(ToyConfig())
        self.limits = protocol.Limits(voices=self.config.voices, max_text_chars=1_000_000)
        self.model = asyncio.Lock()

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        async with self.model:
            await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
            total, gone = 0, False
            for offset in range(0, len(request.text), self.PIECE_CHARS):
                await asyncio.sleep(0.02)  # the model's time for one piece
                if gone:
                    continue
                piece = request.text[offset:offset + self.PIECE_CHARS]
                chunk = tone(len(piece) * self.config.audio_s_per_char, request.sample_rate)
                try:
                    await ws.send_bytes(chunk)
                except Exception:  # the client left: keep the model busy anyway (the defect)
                    gone = True
                total += len(chunk)
            if not gone:
                await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))
