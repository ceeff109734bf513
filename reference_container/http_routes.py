"""HTTP routes: `GET /ping` (and `POST /ping`, which the bidirectional-streaming guide names), `GET /voices`
and `POST /invocations` (one whole input, audio streamed as it is made)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from bidi_tts import protocol
from bidi_tts.audio import wav_header
from reference_container.scheduler import Busy, JobCancelled, JobFailed, Scheduler
from reference_container.state import AppState
from reference_container.streaming import MessageStats, message_audio

FORMATS = ("pcm", "wav")
_request_ids = itertools.count(1)


class _PostStream:
    """A POST response for reference_container.drain: it finishes its one input, unless stopped."""

    def __init__(self, scheduler: Scheduler, session_id: str) -> None:
        self.scheduler, self.session_id = scheduler, session_id

    def drain(self) -> None:
        pass  # one input: the stream ends when its audio does

    def stop_now(self) -> None:
        self.scheduler.cancel_session(self.session_id)  # the body ends early (JobCancelled)


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status)


async def ping(request: Request) -> Response:
    """200 once the model has loaded and warmed up, 503 before."""
    state: AppState = request.app.state.container
    if state.ready.is_set():
        return JSONResponse({"status": "ok"})
    return JSONResponse({"status": "failed" if state.failed else "loading"}, status_code=503)


async def voices(request: Request) -> Response:
    """The voice allow-list once the model is loaded: `{"voices": [...], "default": ..., "source": ...}`.

    503 `busy` while loading (the list is what the loaded model accepts, not a guess); the command
    line's `--list-voices` tells the same without starting the server.
    """
    state: AppState = request.app.state.container
    if not state.ready.is_set():
        return _error(503, protocol.ErrorCode.BUSY.value, "The model is still loading; retry when /ping answers 200.")
    inner = getattr(state.synth, "inner", state.synth)
    return JSONResponse({
        "voices": sorted(state.limits.voices or ()),
        "default": state.limits.default_voice,
        "source": getattr(inner, "voice_source", None),
    })


async def invocations(request: Request) -> Response:
    """Synthesize one JSON input; stream raw PCM (`format: pcm`) or a streaming WAV (`format: wav`)."""
    state: AppState = request.app.state.container
    if not state.ready.is_set():
        return _error(503, "busy", "The model is still loading; retry when /ping answers 200.")
    body = await request.body()
    if len(body) > state.settings.max_message_bytes:
        return _error(413, protocol.ErrorCode.TEXT_TOO_LONG.value, "The request body is too large.")
    try:
        parsed = protocol.parse_client_message(body, state.limits)
    except protocol.ProtocolError as exc:
        return _error(400, exc.code.value, exc.message)
    if not isinstance(parsed, protocol.SynthesizeRequest):
        return _error(400, protocol.ErrorCode.UNKNOWN_TYPE.value, "POST takes a synthesize message.")
    fmt = json.loads(body).get("format", "pcm")
    if fmt not in FORMATS:
        code = protocol.ErrorCode.BAD_FORMAT
        return _error(400, code.value, protocol.ERROR_MESSAGES[code])
    if state.drain.draining:
        return _error(503, protocol.ErrorCode.BUSY.value, "The container is shutting down.")
    try:
        ticket = state.scheduler.admit()
    except Busy:
        return _error(503, protocol.ErrorCode.BUSY.value, protocol.ERROR_MESSAGES[protocol.ErrorCode.BUSY])
    session_id = f"http-{next(_request_ids)}"
    stats = MessageStats(session_id, parsed.request_id)

    stream = _PostStream(state.scheduler, session_id)

    async def body_stream() -> AsyncIterator[bytes]:
        outcome = "complete"
        state.drain.register(stream)
        try:
            if fmt == "wav":
                yield wav_header(sample_rate=parsed.sample_rate, streaming=True)
            async for frame in message_audio(
                state.scheduler, parsed, stats, model_rate=state.synth.sample_rate,
                first_clause_chars=state.settings.first_clause_chars, cost=state.cost,
            ):
                stats.audio_bytes += len(frame)
                yield frame
        except (JobCancelled, JobFailed):
            # Headers are gone already: all we can do is end the body early (logged server-side).
            outcome = "internal"
        finally:
            # Also runs when the client goes away mid-stream: stop its queued and running work.
            state.scheduler.cancel_session(session_id)
            ticket.release()
            state.drain.unregister(stream)
            stats.log(outcome)

    media = "audio/wav" if fmt == "wav" else "audio/pcm"
    headers = {"X-Sample-Rate": str(parsed.sample_rate), "X-Request-Id": parsed.request_id}
    return StreamingResponse(body_stream(), media_type=media, headers=headers)
