"""Toys shaped like real containers seen in the wild, with the defects the issue reports: the AWS
post's sample (one global lock, no sample_rate in synthesis_start) and a runaway that accepts any
text and keeps synthesizing after its client has gone."""

from __future__ import annotations

import asyncio
import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from bidi_tts.chunker import split_sentences
from tests.toys.good import ToyConfig, ToyContainer, tone, wav_header


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


class AwsSampleToy(ToyContainer):
    """Behaves like the AWS post's serve.py (aws-samples/sample-kokoro-tts-for-ai-agents), its seven
    defects and all, with a fast fake model (no code of the sample is here):

    1. one global lock: every session waits for every other one's whole message (TTS-ISOLATION);
    2. all of a message's audio sent at once, in one frame, after the whole synthesis (TTS-STREAM);
    3. no text limit: 200,000 characters are synthesized (TTS-ERROR, text_too_long);
    4. no cancel on disconnect: a message whose client has left is still synthesized to its end,
       holding the lock (TTS-ISOLATION, close.client.1);
    5. {"type": "cancel"} is read as a message without text: an uncoded "text required" error;
    6. error frames carry no `code`, only a message (TTS-ERROR);
    7. synthesis_start carries no sample_rate (TTS-AUDIO);
    and a message with no request_id is answered with request_id 'unknown' (allowed: nothing to echo).

    The model takes `per_sentence_s` per sentence plus `per_char_s` per character, at most `cap_s`
    for one message (so that a runaway ends within a test's time).
    """

    def __init__(self, *, per_sentence_s: float = 0.1, per_char_s: float = 0.000_15, cap_s: float = 30.0) -> None:
        super().__init__(ToyConfig())
        self.limits = protocol.Limits(voices=self.config.voices, max_text_chars=10**9,
                                      max_message_bytes=10**9)
        self.per_sentence_s = per_sentence_s
        self.per_char_s = per_char_s
        self.cap_s = cap_s
        self.model = asyncio.Lock()

    def model_seconds(self, text: str) -> float:
        sentences = max(1, len(split_sentences(text)))
        return min(self.cap_s, sentences * self.per_sentence_s + len(text) * self.per_char_s)

    def _audio(self, request: protocol.SynthesizeRequest) -> bytes:
        return tone(min(30.0, len(request.text) * self.config.audio_s_per_char / request.speed), request.sample_rate)

    async def invocations(self, request: Request) -> Response:
        """POST: the same model behind the same lock, the whole answer at once (no streaming either)."""
        try:
            parsed = self.parse(await request.body())
        except protocol.ProtocolError as exc:
            return JSONResponse({"code": exc.code.value, "message": exc.message}, status_code=400)
        if not isinstance(parsed, protocol.SynthesizeRequest):
            return JSONResponse({"code": "unknown_type", "message": "POST takes a synthesize message."}, 400)
        fmt = json.loads(await request.body()).get("format", "pcm")
        if fmt not in ("pcm", "wav"):
            return JSONResponse({"code": "bad_format", "message": "format must be pcm or wav."}, 400)
        async with self.model:
            await asyncio.sleep(self.model_seconds(parsed.text))
            pcm = self._audio(parsed)
        if fmt == "wav":
            return Response(wav_header(parsed.sample_rate) + pcm, media_type="audio/wav")
        return Response(pcm, media_type="audio/pcm")

    @staticmethod
    def _error(request_id: str, message: str) -> str:
        return json.dumps({"type": "error", "request_id": request_id, "message": message})

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            while True:
                data = await self.receive_message(ws)
                if data is None:
                    return
                try:
                    raw = json.loads(data)
                except Exception:  # any parse failure (RecursionError included) gets this one answer
                    await ws.send_text(self._error("unknown", "invalid JSON"))
                    continue
                rid = str(raw.get("request_id") or "unknown") if isinstance(raw, dict) else "unknown"
                if isinstance(raw, dict) and raw.get("type") == "close":
                    await ws.close(protocol.CloseCode.NORMAL)
                    return
                if not isinstance(raw, dict) or not isinstance(raw.get("text"), str) or not raw["text"].strip():
                    await ws.send_text(self._error(rid, "text required"))  # a cancel lands here too
                    continue
                try:
                    message = self.parse(data)
                except protocol.ProtocolError as exc:
                    await ws.send_text(self._error(rid, exc.message))
                    continue
                assert isinstance(message, protocol.SynthesizeRequest)
                await self._synthesize(ws, message, rid)
        except WebSocketDisconnect:
            return

    async def _synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest, rid: str) -> None:
        async with self.model:
            try:
                await ws.send_text(json.dumps({"type": "synthesis_start", "request_id": rid}))
            except Exception:  # the client has gone; the model runs all the same (defect 4)
                pass
            seconds = self.model_seconds(request.text)
            await asyncio.sleep(seconds)  # the model call: not interrupted when the client leaves
            pcm = self._audio(request)
            try:
                await ws.send_bytes(pcm)  # all the audio at once, at the end (defect 2)
                await ws.send_text(protocol.synthesis_complete(rid, len(pcm), request.sample_rate))
            except Exception:
                return


class SampleLikeGoodToy(ToyContainer):
    """A correct container at AwsSampleToy's model pace (streaming each sentence as it is made):
    the reference the sample's run time is compared with."""

    def __init__(self) -> None:
        super().__init__(ToyConfig(first_audio_delay_s=0.1))
