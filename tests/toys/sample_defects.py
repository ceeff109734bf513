"""Toys with the defects the AWS sample's containers showed the suite missed or blamed wrongly (issue 32,
part A). Each is a sine-tone stand-in with the defect's shape only (no code of the sample is here); the
paces are made up, chosen so that each situation happens within a test's time."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from bidi_tts import protocol
from bidi_tts.chunker import split_sentences
from tests.toys.good import ServerThread, ToyConfig, ToyContainer, tone

PACED = ToyConfig(realtime_factor=0.05)  # 1 s of audio in 50 ms, as test_broken_toys paces its toys


def _uncoded_error(request_id: str, message: str) -> str:
    return json.dumps({"type": "error", "request_id": request_id, "message": message})


class RequestIdLostToy(ToyContainer):
    """Echoes the request_id where it checks for text; every other error (the exception path: a bad
    voice, a bad speed) carries "unknown"."""

    async def requests(self, ws: WebSocket) -> AsyncIterator[protocol.ClientMessage]:
        while (data := await self.receive_message(ws)) is not None:
            try:
                message = self.parse(data)
            except protocol.ProtocolError as exc:
                if exc.code is not protocol.ErrorCode.TEXT_REQUIRED:
                    exc.request_id = "unknown"
                await ws.send_text(protocol.error_from(exc))
                continue
            yield message


class AnnounceThenDropToy(ToyContainer):
    """Takes any message, sends synthesis_start, then finds the voice, speed or text bad: an uncoded
    error and a dropped session (1011), as kokoro-cpu did for bad voices, speeds, blank and oversize texts."""

    FRAMING = (protocol.ErrorCode.INVALID_JSON, protocol.ErrorCode.NOT_AN_OBJECT, protocol.ErrorCode.UNKNOWN_TYPE)

    def __init__(self) -> None:
        super().__init__(PACED)

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            while (data := await self.receive_message(ws)) is not None:
                try:
                    message = self.parse(data)
                except protocol.ProtocolError as exc:
                    if exc.code in self.FRAMING:
                        await ws.send_text(protocol.error_from(exc))
                        continue
                    rid = exc.request_id or "unknown"
                    await ws.send_text(protocol.synthesis_start(rid, 24_000))
                    await ws.send_text(_uncoded_error(rid, exc.message))
                    await ws.close(protocol.CloseCode.INTERNAL_ERROR)
                    return
                if isinstance(message, protocol.CloseRequest):
                    await self.on_close_request(ws)
                    return
                if isinstance(message, protocol.SynthesizeRequest):
                    await self.synthesize(ws, message)
        except WebSocketDisconnect:
            return


class UncodedCancelToy(ToyContainer):
    """Answers {"type": "cancel"} like a message without text: an error with no code; the session stays
    usable (the sample's cancel, after the message it meant to cancel has run to its end)."""

    def __init__(self) -> None:
        super().__init__(PACED)

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            async for message in self.requests(ws):
                if isinstance(message, protocol.CloseRequest):
                    await self.on_close_request(ws)
                    return
                if isinstance(message, protocol.CancelRequest):
                    await ws.send_text(_uncoded_error("unknown", "text required"))
                    continue
                await self.synthesize(ws, message)
        except WebSocketDisconnect:
            return


class NoAudioBytesToy(ToyContainer):
    """A correct cancel-less container whose synthesis_complete has no audio_bytes (audio.consistent.1's
    subject, not cancel.queued.1's)."""

    def __init__(self) -> None:
        super().__init__(PACED)

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        async for chunk in self.synth.stream(request):
            await ws.send_bytes(chunk)
        await ws.send_text(json.dumps({"type": "synthesis_complete", "request_id": request.request_id}))


class IgnoredRateToy(ToyContainer):
    """Announces no sample_rate and makes 24 kHz audio whatever is asked; its synthesis_complete gives
    the duration it made (total_duration_s, as the sample names it), which gives the rate away."""

    NATIVE = 24_000

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(json.dumps({"type": "synthesis_start", "request_id": request.request_id}))
        native = replace(request, sample_rate=self.NATIVE)
        total = 0
        async for chunk in self.synth.stream(native):
            await ws.send_bytes(chunk)
            total += len(chunk)
        await ws.send_text(json.dumps({"type": "synthesis_complete", "request_id": request.request_id,
                                       "audio_bytes": total, "total_duration_s": round(total / 2 / self.NATIVE, 6)}))


class BufferingPostToy(ToyContainer):
    """POST /invocations makes the whole answer before sending any of it (0.4 s a sentence, the status
    line included), as the GPU serve.py does behind its queue gate."""

    PER_SENTENCE_S = 0.4

    async def invocations(self, request: Request) -> Response:
        parsed = self.parse(await request.body())
        assert isinstance(parsed, protocol.SynthesizeRequest)
        sentences = split_sentences(parsed.text) or [parsed.text]
        await asyncio.sleep(self.PER_SENTENCE_S * len(sentences))
        pcm = tone(len(parsed.text) * self.config.audio_s_per_char, parsed.sample_rate)
        return Response(pcm, media_type="audio/pcm")


class PingLiesToy(ToyContainer):
    """/ping answers 200, but the model never loaded: every message is refused with error internal."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.error_frame(protocol.ErrorCode.INTERNAL, "The model is not loaded.",
                                                request.request_id))


class RacyLockToy(ToyContainer):
    """kokoro-cpu's shape: synthesis_start, then G2P (here 1 ms a character) outside the model's lock,
    then the whole message's audio made under the lock. A 'Hi.' sent at a long message's synthesis_start
    is through G2P first and wins the lock; one sent while the long message streams waits for all of it."""

    G2P_S_PER_CHAR = 0.001

    def __init__(self) -> None:
        super().__init__(ToyConfig(realtime_factor=0.2))  # 6.6 s of audio for the 8 sentences in 1.3 s
        self.model = asyncio.Lock()

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        await asyncio.sleep(len(request.text) * self.G2P_S_PER_CHAR)  # G2P, before the lock (the defect)
        total = 0
        async with self.model:
            async for chunk in self.synth.stream(request):
                await ws.send_bytes(chunk)
                total += len(chunk)
        await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class RacyWholeLockToy(RacyLockToy):
    """kokoro-cpu exactly: RacyLockToy's race, and the whole message made under the lock, then sent as
    ONE frame. B at A's synthesis_start wins the race; at A's first audio, A is done: only a B sent
    while A is being made, before any of its audio, meets the lock."""

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        await asyncio.sleep(len(request.text) * self.G2P_S_PER_CHAR)
        async with self.model:
            pcm = b"".join([chunk async for chunk in self.synth.stream(request)])
        await ws.send_bytes(pcm)
        await ws.send_text(protocol.synthesis_complete(request.request_id, len(pcm), request.sample_rate))


class LockedPostToy(ToyContainer):
    """The GPU serve.py's POST: the model's lock held across the response stream's yield, so a client
    that stops reading a POST holds every session (WebSocket ones too, behind the same lock)."""

    def __init__(self) -> None:
        super().__init__(ToyConfig())
        self.model = asyncio.Lock()

    async def _locked(self, request: protocol.SynthesizeRequest) -> AsyncIterator[bytes]:
        async with self.model:
            async for chunk in self.synth.stream(request):
                yield chunk

    async def invocations(self, request: Request) -> Response:
        parsed = self.parse(await request.body())
        assert isinstance(parsed, protocol.SynthesizeRequest)
        return StreamingResponse(self._locked(parsed), media_type="audio/pcm")

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        async with self.model:
            await super().synthesize(ws, request)


class BurningToy(ToyContainer):
    """A process toy whose model burns the CPU (0.2 s of busy work a sentence, in a thread). With
    `runaway`, the model goes on to a message's end after its client has left (the sample's defect);
    otherwise it stops at the sentence in progress. With `whole`, a message is made in one go and sent
    as ONE frame at its end (kokoro-cpu's `run_in_executor` then `send_bytes`): its first audio comes
    when its work is done, and the next message queued on the session is made whether its client
    is still there or not."""

    BURN_S = 0.2

    def __init__(self, runaway: bool, whole: bool = False) -> None:
        super().__init__(ToyConfig())
        self.runaway = runaway
        self.whole = whole

    @staticmethod
    def _burn(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        gone = False
        with contextlib.suppress(Exception):
            await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        if self.whole:
            sentences = split_sentences(request.text) or [request.text]
            await asyncio.to_thread(self._burn, self.BURN_S * len(sentences))
            chunk = tone(len(request.text) * self.config.audio_s_per_char, request.sample_rate)
            with contextlib.suppress(Exception):  # the client left: nothing to tell it
                await ws.send_bytes(chunk)
                await ws.send_text(protocol.synthesis_complete(request.request_id, len(chunk), request.sample_rate))
            return
        total = 0
        for sentence in split_sentences(request.text) or [request.text]:
            if gone and not self.runaway:
                return
            await asyncio.to_thread(self._burn, self.BURN_S)
            chunk = tone(len(sentence) * self.config.audio_s_per_char, request.sample_rate)
            try:
                await ws.send_bytes(chunk)
            except Exception:  # the client left
                gone = True
            total += len(chunk)
        if not gone:
            await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


def main() -> None:
    """Run BurningToy as a process: `--runaway` keeps abandoned work going and ignores SIGTERM; `--whole`
    sends each message as one frame at its end."""
    parser = argparse.ArgumentParser(description="Run a process toy of tests/toys/sample_defects.py.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--runaway", action="store_true")
    parser.add_argument("--whole", action="store_true", help="each message made in one go, sent as one frame")
    args = parser.parse_args()
    stopping = threading.Event()
    if args.runaway:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the defect: SIGTERM is ignored
    else:  # the server in a thread installs no handler: stop it as uvicorn would (its sessions closed, 1012)
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    with ServerThread(BurningToy(args.runaway, args.whole).app(), port=args.port):
        while not stopping.wait(1):
            pass


if __name__ == "__main__":
    main()
