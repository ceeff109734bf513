"""post.*: POST /invocations: streamed PCM, streamed WAV with 0xFFFFFFFF sizes, coded 400 errors.

On a container the cases POST to its base URL; on a SageMaker endpoint they go through
InvokeEndpointWithResponseStream (:meth:`SageMakerEndpointTarget.post_invocations`), where a
container's error status comes back as a 424 ModelError carrying that status and body."""

from __future__ import annotations

import json
import statistics
import time

import httpx

from bidi_tts.audio import STREAMING_SIZE, WavError, find_wraps, wav_layout
from bidi_tts_conformance.cases._util import SENTENCE, SHORT, message_problem, rms
from bidi_tts_conformance.cases.audio import (
    MIN_RMS,
    STREAM_FIRST,
    STREAM_RATIO,
    STREAM_REST,
    STREAM_SENTENCES,
    STREAM_SLACK_S,
)
from bidi_tts_conformance.cases.isolation import ping_ok
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, Requires, case, not_judged, ok
from bidi_tts_conformance.targets import SageMakerEndpointTarget


def _endpoint(ctx: CaseContext) -> SageMakerEndpointTarget | None:
    return ctx.target if isinstance(ctx.target, SageMakerEndpointTarget) else None


BODY_MARGIN_S = 5.0  # of the case's time, kept back to say why no body came before the case timeout ends it


class NoBody(Exception):
    """A reachable container sent no (whole) body within the time allowed: what it did answer, for people."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


def _body_time(ctx: CaseContext, started: float) -> httpx.Timeout:
    """A container may make its whole answer before sending any of it: the body gets what is left of the
    case's time, not the silence (whether it streams is post.stream.1's subject); the connection gets the
    silence."""
    left = ctx.options.case_timeout - (time.perf_counter() - started) - BODY_MARGIN_S
    return httpx.Timeout(ctx.options.silence, read=max(ctx.options.silence, left))


async def _no_body(ctx: CaseContext, what: str, status: int | None, got: int, quiet_s: float) -> NoBody:
    """Say what a container that took the POST and then sent nothing (more) did, reachability included."""
    answered = ("took the connection and the request, then sent nothing, not even the status line" if status is None
                else f"answered HTTP {status}, then sent " + (f"{got} body bytes and stopped" if got else "no body"))
    ping = await ping_ok(ctx)
    reach = "; /ping answered 200" if ping is None else f"; {ping}"
    return NoBody(f"the container is reachable ({answered}{reach}) but sent {'no more' if got else 'no'} body for "
                  f"{what} in {quiet_s:.1f} s (what was left of the case's time)")


async def _post_raw(ctx: CaseContext, body: bytes, started: float) -> tuple[int, str, bytes]:
    """Status, content type and body of one POST of `body` (raises NoBody)."""
    if (endpoint := _endpoint(ctx)) is not None:
        answer = await endpoint.post_invocations(body)
        return answer.status, answer.content_type, answer.body
    status, ctype, data, _, _ = await _fetch(ctx, body, started, f"a POST of {len(body)} bytes")
    return status, ctype, data


async def _post(ctx: CaseContext, body: dict[str, object],
                started: float) -> tuple[int, str, bytes, float | None, float]:
    """Status, content type, body, time to first body byte, total time (raises NoBody)."""
    if (endpoint := _endpoint(ctx)) is not None:
        answer = await endpoint.post_invocations(json.dumps(body).encode())
        return answer.status, answer.content_type, answer.body, answer.first_s, answer.total_s
    text = body.get("text")
    what = f"{len(text)} characters of text" if isinstance(text, str) else "the POST"
    return await _fetch(ctx, json.dumps(body).encode(), started, what)


async def _fetch(ctx: CaseContext, content: bytes, started: float,
                 what: str) -> tuple[int, str, bytes, float | None, float]:
    start = time.perf_counter()
    first: float | None = None
    data = bytearray()
    status: int | None = None
    allowed = _body_time(ctx, started)
    try:
        async with ctx.http().stream("POST", "/invocations", content=content, timeout=allowed,
                                     headers={"Content-Type": "application/json"}) as response:
            status = response.status_code
            async for chunk in response.aiter_bytes():
                if chunk and first is None:
                    first = time.perf_counter() - start
                data.extend(chunk)
            return (response.status_code, response.headers.get("content-type", ""), bytes(data), first,
                    time.perf_counter() - start)
    except httpx.ReadTimeout:
        raise await _no_body(ctx, what, status, len(data), allowed.read or 0.0) from None


@case("post.pcm.1", "POST /invocations returns raw s16le PCM (audio/pcm) by default",
      clauses=["POST-INVOCATIONS", "TTS-AUDIO"], expect="200, audio/pcm, no header, even length, not silent",
      requires=[Requires.INVOCATIONS])
async def post_pcm(ctx: CaseContext) -> Outcome:
    try:
        status, ctype, data, _, _ = await _post(ctx, {"text": SENTENCE, "voice": ctx.options.voice},
                                                time.perf_counter())
    except NoBody as exc:
        return not_judged(f"{exc.detail}: the format cannot be judged without a body (a response made whole "
                          "before it is sent is post.stream.1's subject)")
    if status != 200:
        raise CaseFailed(f"POST /invocations answered {status}: {data[:120]!r}", expected="200",
                         actual=str(status))
    if not ctype.startswith("audio/pcm"):
        raise CaseFailed(f"Content-Type {ctype!r}", expected="audio/pcm", actual=ctype)
    if data[:4] == b"RIFF":  # raw PCM means no header: a player would play the header as a click
        raise CaseFailed("the raw PCM body starts with a WAV header (RIFF)", expected="raw s16le PCM",
                         actual="a WAV header first")
    if len(data) % 2 or rms(data) < MIN_RMS:
        raise CaseFailed(f"{len(data)} bytes, RMS {rms(data):.1f}", expected="whole samples of real sound")
    if wraps := find_wraps(data):  # POST audio is checked too; the sessions' audio is, by the session itself
        ctx.notes.add(f"TTS-AUDIO: the POST body has {len(wraps)} wrapped samples, the first "
                      f"{wraps[0].describe(ctx.options.sample_rate).removeprefix('a wrapped sample ')} "
                      "(judged by audio.wrap.1)")
    return ok(f"{len(data)} bytes")


@case("post.wav.1", 'POST /invocations with "format": "wav" streams a WAV header with 0xFFFFFFFF sizes',
      clauses=["POST-INVOCATIONS"], expect="RIFF/WAVE, PCM 16-bit mono at the rate, sizes 0xFFFFFFFF",
      requires=[Requires.INVOCATIONS])
async def post_wav(ctx: CaseContext) -> Outcome:
    try:
        status, _, data, _, _ = await _post(ctx, {"text": SHORT, "format": "wav"}, time.perf_counter())
    except NoBody as exc:
        return not_judged(f"{exc.detail}: the WAV stream cannot be judged without a body (a response made whole "
                          "before it is sent is post.stream.1's subject)")
    if status != 200:
        raise CaseFailed(f"POST /invocations (wav) answered {status}", expected="200", actual=str(status))
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise CaseFailed(f"not a WAV stream: starts {data[:12]!r}", expected="RIFF....WAVE")
    try:
        wav = wav_layout(data)
    except WavError as exc:
        raise CaseFailed(f"WAV header without a whole fmt and data chunk: {exc}", expected="RIFF, fmt, data",
                         actual=str(exc)) from None
    problems = []
    if wav.riff_size != STREAMING_SIZE or wav.data_size != STREAMING_SIZE:
        problems.append(f"sizes RIFF={wav.riff_size:#x} data={wav.data_size:#x} (a streamed WAV uses 0xFFFFFFFF)")
    if (wav.format_tag, wav.channels, wav.bits) != (1, 1, 16) or wav.sample_rate != ctx.options.sample_rate:
        problems.append(f"format {wav.format_tag}, {wav.channels} channels, {wav.bits} bits, {wav.sample_rate} Hz")
    if problems:
        raise CaseFailed("; ".join(problems), expected="PCM, 1 channel, 16 bits, sizes 0xFFFFFFFF")
    return ok(f"{len(data) - wav.data_start} PCM bytes after the header")


@case("post.errors.1", "POST /invocations answers bad input with 400 and a coded JSON body",
      clauses=["POST-INVOCATIONS", "TTS-ERROR"], expect='400 {"code", "message"} with the right code',
      requires=[Requires.INVOCATIONS])
async def post_errors(ctx: CaseContext) -> Outcome:
    # The code for a bad `format` is not pinned by CONTRACT.md (the reference says bad_format): any code.
    bad: list[tuple[str, bytes, str | None]] = [
        ("not JSON", b"Hello there", "invalid_json"),
        ("no text", json.dumps({"voice": ctx.options.voice}).encode(), "text_required"),
        ("unknown voice", json.dumps({"text": SHORT, "voice": "../../etc/passwd"}).encode(), "unknown_voice"),
        ("speed 0", json.dumps({"text": SHORT, "speed": 0}).encode(), "bad_speed"),
        ("invalid UTF-8", b'{"text": "caf\xc3"}', "invalid_utf8"),
        ("format 'mp3'", json.dumps({"text": SHORT, "format": "mp3"}).encode(), None),
    ]
    started = time.perf_counter()
    for what, body, code in bad:
        try:
            status, _, answer = await _post_raw(ctx, body, started)
        except NoBody as exc:  # bad input must be answered, and at once: no answer in the case's time is none
            raise CaseFailed(f"{what}: {exc.detail}", expected="400", actual="no answer") from None
        if status != 400:
            raise CaseFailed(f"{what}: HTTP {status}", expected="400", actual=str(status))
        try:
            obj = json.loads(answer)
        except ValueError:
            shown = answer[:80].decode("utf-8", "replace")
            raise CaseFailed(f"{what}: the 400 body is not JSON: {shown!r}",
                             expected='{"code", "message"}', actual="not JSON") from None
        got = obj.get("code") if isinstance(obj, dict) else obj
        if not isinstance(obj, dict) or (got != code if code else not (isinstance(got, str) and got)):
            shown = "no code" if got is None else f"code {json.dumps(got)}"
            raise CaseFailed(f"{what}: the 400 body has {shown}", expected=code or "a code", actual=shown)
        if problem := message_problem(obj.get("message")):
            raise CaseFailed(f"{what}: {problem}", expected="a human message", actual=problem)
    return ok(f"{len(bad)} bad bodies answered 400 with their codes")


async def _first_bytes_s(ctx: CaseContext, text: str) -> float:
    """Time to the first body bytes of a POST; the rest of the response is dropped unread."""
    if (endpoint := _endpoint(ctx)) is not None:
        answer = await endpoint.post_invocations(json.dumps({"text": text}).encode(), first_only=True)
        if answer.status != 200:
            raise CaseFailed(f"POST /invocations answered HTTP {answer.status}", expected="200",
                             actual=str(answer.status))
        if answer.first_s is None:
            raise CaseFailed("POST /invocations answered 200 with an empty body", expected="audio",
                             actual="no body")
        return answer.first_s
    start = time.perf_counter()
    try:
        async with ctx.http().stream("POST", "/invocations", content=json.dumps({"text": text}),
                                     headers={"Content-Type": "application/json"}) as response:
            if response.status_code != 200:
                raise CaseFailed(f"POST /invocations answered HTTP {response.status_code}", expected="200",
                                 actual=str(response.status_code))
            async for chunk in response.aiter_bytes():
                if chunk:
                    return time.perf_counter() - start
    except httpx.ReadTimeout:
        # The connection was taken and the request sent: the container is reachable, and silent while
        # it makes the whole answer (a buffered response), which is this case's subject, not the network's.
        waited = time.perf_counter() - start
        raise CaseFailed(f"the response is buffered, not streamed: the container took the POST of {len(text)} "
                         f"characters and sent nothing (not even the status line) for {waited:.1f} s, the "
                         "reply timeout: it was reachable and making its whole answer before sending any of it",
                         expected="the first bytes while the rest is synthesized",
                         actual=f"nothing for {waited:.1f} s") from None
    raise CaseFailed("POST /invocations answered 200 with an empty body", expected="audio", actual="no body")


@case("post.stream.1", "POST /invocations streams: the first bytes leave before the last sentence is "
      "synthesized", clauses=["POST-INVOCATIONS", "TTS-STREAM"],
      expect=f"first bytes for {STREAM_SENTENCES} sentences within {STREAM_RATIO:g}x (+{STREAM_SLACK_S * 1000:.0f} "
             "ms) those of the first sentence alone", requires=[Requires.INVOCATIONS])
async def post_stream(ctx: CaseContext) -> Outcome:
    await _first_bytes_s(ctx, STREAM_FIRST)  # warm-up
    ctx.left_work_running = True  # responses are dropped unread: the container may still be working
    t1 = await _first_bytes_s(ctx, STREAM_FIRST)
    trials = 1 if t1 > 0.3 else 3
    if trials > 1:
        t1 = statistics.median([t1] + [await _first_bytes_s(ctx, STREAM_FIRST) for _ in range(trials - 1)])
    limit = STREAM_RATIO * t1 + STREAM_SLACK_S
    whole = []
    for _ in range(trials):
        whole.append(await _first_bytes_s(ctx, STREAM_FIRST + STREAM_REST))
        if whole[-1] <= limit:
            break
    tm = min(whole)
    shown = (f"first bytes after {tm * 1000:.0f} ms for {STREAM_SENTENCES} sentences, {t1 * 1000:.0f} ms for the "
             f"first sentence alone")
    if tm > limit:
        raise CaseFailed(f"the response is buffered, not streamed: {shown}", expected=f"at most {limit * 1000:.0f} ms",
                         actual=shown)
    return ok(shown)
