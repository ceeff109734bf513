"""Toys for the wrong blames of issue 32 (the AWS sample's containers under the suite): a container that
is silent, not mixed up; a POST that is made whole, not unreachable; work that outlives its client and
hides the cases after it. Each is a sine-tone stand-in with the shape of the sample's behaviour only (no
code of the sample is here); the paces are made up, chosen so that each situation happens within a
test's time (FAST options: 1.5 s of silence allowed)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from bidi_tts.chunker import split_sentences
from tests.toys.good import ToyConfig, ToyContainer, tone, wav_header


class StartsThenMuteToy(ToyContainer):
    """Announces every message (synthesis_start) and then sends nothing more: a container whose model is
    too slow for the silence allowed, or hangs. No session gets any audio, alone or beside others."""

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            async for message in self.requests(ws):
                if isinstance(message, protocol.CloseRequest):
                    await self.on_close_request(ws)
                    return
                if isinstance(message, protocol.SynthesizeRequest):
                    await ws.send_text(protocol.synthesis_start(message.request_id, message.sample_rate))
        except WebSocketDisconnect:
            return


class ConstantLengthToy(ToyContainer):
    """Streams the same half second of audio for any text, alone or beside other sessions: its audio
    does not follow the text's length, which says nothing about isolation."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        pcm = tone(0.5, request.sample_rate)
        await ws.send_bytes(pcm)
        await ws.send_text(protocol.synthesis_complete(request.request_id, len(pcm), request.sample_rate))


async def _until_gone(request: Request) -> None:
    """Once the body is read, the server's next message is the client's disconnect."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


class WholePostToy(ToyContainer):
    """POST /invocations makes the whole answer before sending any of it, status line included, at
    `per_sentence_s` a sentence (the GPU serve.py of the sample on a slow CPU); any `format` but wav is
    taken as PCM (it does not refuse 'mp3'). The WebSocket side is the good toy's."""

    def __init__(self, per_sentence_s: float = 2.5) -> None:
        super().__init__(ToyConfig())
        self.per_sentence_s = per_sentence_s

    async def invocations(self, request: Request) -> Response:
        body = await request.body()
        try:
            parsed = self.parse(body)
        except protocol.ProtocolError as exc:
            return JSONResponse({"code": exc.code.value, "message": exc.message}, status_code=400)
        assert isinstance(parsed, protocol.SynthesizeRequest)
        await asyncio.sleep(self.per_sentence_s * len(split_sentences(parsed.text) or [parsed.text]))
        pcm = tone(len(parsed.text) * self.config.audio_s_per_char, parsed.sample_rate)
        if json.loads(body).get("format") == "wav":
            return Response(wav_header(parsed.sample_rate) + pcm, media_type="audio/wav")
        return Response(pcm, media_type="audio/pcm")


class SilentPostToy(ToyContainer):
    """Takes a POST and never sends anything back, not even the status line, until the client leaves;
    /ping answers 200 all along."""

    async def invocations(self, request: Request) -> Response:
        await _until_gone(request)
        return Response(status_code=204)


class HeadersOnlyPostToy(ToyContainer):
    """Answers a POST with 200 and its headers, then sends no body (starlette ends the stream when the
    client leaves)."""

    async def invocations(self, request: Request) -> Response:
        async def never() -> AsyncIterator[bytes]:
            await asyncio.sleep(3600)
            yield b""

        return StreamingResponse(never(), media_type="audio/pcm")


async def _sent(send: Awaitable[None]) -> bool:
    """Whether a send reached a client that is still there."""
    try:
        await send
    except Exception:  # the client left
        return False
    return True


class NeverStopsToy(ToyContainer):
    """kokoro-cpu's shape for abandoned work: one model lock held for a whole message, whose sentences are
    made (SENTENCE_S each) to the end whether or not the client is still there: the socket is not read
    while it synthesizes. health.busy.1's three 1,100-character texts (36 sentences each) keep it busy for
    about 20 s after the case, over the runner's bounded wait (6 s at 1.5 s of silence allowed).
    (samples.RunawayToy has the same defect at a pace that ends those texts within a second.)"""

    SENTENCE_S = 0.2

    def __init__(self) -> None:
        super().__init__(ToyConfig())
        self.model = asyncio.Lock()
        self.halted = False  # set by a test before it stops the server: no more sentences are made

    def halt(self) -> None:
        self.halted = True

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        async with self.model:
            here = await _sent(ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate)))
            total = 0
            for sentence in split_sentences(request.text) or [request.text]:
                if self.halted:
                    return
                await asyncio.sleep(self.SENTENCE_S)
                pcm = tone(len(sentence) * self.config.audio_s_per_char, request.sample_rate)
                here = here and await _sent(ws.send_bytes(pcm))
                total += len(pcm)
            if here:
                with contextlib.suppress(Exception):
                    await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))
