"""STAND-IN for vLLM's OpenAI server running Orpheus: the three endpoints the vllm proxy calls.

- `GET /health`: 200 once loaded.
- `GET /metrics`: `vllm:num_requests_running{...}` and `vllm:num_requests_waiting{...}`, counted
  here (at most STANDIN_VLLM_MAX_RUNNING completions run at once, default 4; the rest wait).
- `POST /v1/completions` (`stream` true: SSE `data: {...}` lines, then `data: [DONE]`): the text of
  the proxy's Orpheus prompt spoken by this project's int8 ONNX Kokoro-82M, sentence by sentence,
  sent as Orpheus audio tokens (7 per 2048-sample frame, bench/sample/standins/snac_codec.py) and cut
  at `max_tokens` as vLLM cuts (the proxy asks 1200: 171 frames, 14.6 s). Pace and length: Kokoro's
  on this CPU (real-time factor about 0.57 on 2 cores), one sentence's tokens at a time once Kokoro
  made it; Orpheus on vLLM streams token by token (about 86 tokens per audio second).
Runs in the proxy's process (a thread) so the stand-in decoder can read the audio back.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
import time
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bench.sample.standins import onnx_model, snac_codec

_PROMPT_RE = re.compile(r"<custom_token_3>(?P<voice>[^:]*): (?P<text>.*)<\|eot_id\|>", re.DOTALL)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
_KOKORO_FOR = {"tara": "af_heart", "leah": "af_sarah", "jess": "af_nicole", "mia": "af_bella",
               "zoe": "af_sky", "leo": "am_michael", "dan": "am_adam", "zac": "am_echo"}
_MAX_RUNNING = int(os.environ.get("STANDIN_VLLM_MAX_RUNNING", "4"))


class _Counts:
    def __init__(self) -> None:
        self.running = 0
        self.waiting = 0
        self.slots: asyncio.Semaphore | None = None


_counts = _Counts()


async def health(request: Request) -> Response:
    return Response(status_code=200)


async def metrics(request: Request) -> Response:
    labels = '{model_name="stand-in-orpheus"}'
    return Response(f"vllm:num_requests_running{labels} {_counts.running}.0\n"
                    f"vllm:num_requests_waiting{labels} {_counts.waiting}.0\n", media_type="text/plain")


def _voice_and_text(prompt: str) -> tuple[str, str]:
    match = _PROMPT_RE.search(prompt)
    if match is None:
        return "af_heart", prompt
    return _KOKORO_FOR.get(match["voice"].strip(), "af_heart"), match["text"]


async def _frames(prompt: str, max_tokens: int) -> AsyncIterator[str]:
    """Token text, one frame of 7 tokens at a time, each sentence after Kokoro synthesized it."""
    voice, text = _voice_and_text(prompt)
    sent = 0
    for sentence in [s for s in _SENTENCE_RE.split(text.strip()) if s.strip()]:
        audio = await run_in_threadpool(onnx_model.audio_for_text, sentence, voice)
        uid = snac_codec.register(audio)
        for frame in range(snac_codec.frame_count(audio)):
            if sent + snac_codec.CODES_PER_FRAME > max_tokens:
                return
            yield snac_codec.tokens_text(snac_codec.frame_codes(uid, frame), sent)
            sent += snac_codec.CODES_PER_FRAME


async def _slot() -> None:
    if _counts.slots is None:
        _counts.slots = asyncio.Semaphore(_MAX_RUNNING)
    _counts.waiting += 1
    try:
        await _counts.slots.acquire()
    finally:
        _counts.waiting -= 1
    _counts.running += 1


def _release() -> None:
    _counts.running -= 1
    assert _counts.slots is not None
    _counts.slots.release()


def _chunk(text: str) -> str:
    return "data: " + json.dumps({"object": "text_completion", "choices": [{"index": 0, "text": text}]}) + "\n\n"


async def completions(request: Request) -> Response:
    body = json.loads(await request.body())
    prompt, max_tokens = str(body.get("prompt", "")), int(body.get("max_tokens", 16))
    await _slot()
    if not body.get("stream"):
        try:
            text = "".join([t async for t in _frames(prompt, max_tokens)])
        finally:
            _release()
        return JSONResponse({"object": "text_completion", "choices": [{"index": 0, "text": text}]})

    async def stream() -> AsyncIterator[str]:
        try:
            async for tokens in _frames(prompt, max_tokens):
                yield _chunk(tokens)
            yield "data: [DONE]\n\n"
        finally:
            _release()

    return StreamingResponse(stream(), media_type="text/event-stream")


app = Starlette(routes=[Route("/health", health), Route("/metrics", metrics),
                        Route("/v1/completions", completions, methods=["POST"])])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_in_thread(timeout_s: float = 60.0) -> str:
    """Serve the stand-in on a free 127.0.0.1 port in a daemon thread; its base URL once it answers."""
    import uvicorn

    onnx_model.model()
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    # uvicorn installs no signal handlers outside the main thread: SIGTERM stays the proxy's uvicorn's
    threading.Thread(target=server.run, name="standin-vllm", daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the stand-in vLLM server did not start on port {port}")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}"
