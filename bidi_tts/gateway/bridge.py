"""One InvokeEndpointWithBidirectionalStream call bridged to one container WebSocket, as SageMaker does.

- SM-WS-PATH: the WebSocket path is ``/invocations-bidirectional-stream`` unless the request carries
  ``X-Amzn-SageMaker-Model-Invocation-Path`` (no leading slash); ``...-Model-Query-String`` is
  appended as the query.
- SM-FRAMES-IN: each client ``PayloadPart`` becomes one WebSocket data frame, TEXT for
  ``DataType=UTF8`` and BINARY otherwise; ``PARTIAL`` parts up to a ``COMPLETE`` one form one
  fragmented message (the websockets library ends it with an empty FIN frame).
- SM-FRAMES-OUT: each container data frame becomes one ``PayloadPart`` with ``DataType`` UTF8/BINARY
  (the opcode of its message) and ``CompletionState`` ``PARTIAL``, or ``COMPLETE`` on the frame
  with FIN: a fragmented container message reaches the client in as many parts as it had frames.
- SM-CLOSE: a container close becomes a ``ModelStreamError`` carrying the close code and reason.
- SM-PINGPONG: the gateway pings the container every ``ping_interval_s`` and closes the WebSocket
  (1011) after ``ping_misses`` unanswered pings in a row (:func:`bidi_tts.gateway.upstream.keepalive`).
- Requests are validated as the service does (:mod:`bidi_tts.gateway.validation`) before any
  connection to the container.
- An unreachable container (refused, handshake rejected, timeout) is a 424 ``ModelError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.frames import Close

from bidi_tts.frames import FrameKind
from bidi_tts.gateway import codec, validation
from bidi_tts.gateway.config import GatewayConfig
from bidi_tts.gateway.connection import H2ServerConnection, StreamGone
from bidi_tts.gateway.upstream import FrameConnection, keepalive
from bidi_tts.protocol import INVOCATION_PATH_HEADER, QUERY_STRING_HEADER, WS_PATH
from bidi_tts.transports._aio import cancel_and_wait


class Gateway(Protocol):
    """What a stream's bridge needs of the gateway that owns it (bidi_tts.gateway.server.Gateway)."""

    config: GatewayConfig
    frames_to_container: list[FrameRecord]

logger = logging.getLogger("bidi_tts.gateway")

_ROUTE = re.compile(r"^/endpoints/(?P<name>[^/?]+)/invocations-bidirectional-stream(?:\?.*)?$")
_VARIANT_HEADER = "x-amzn-sagemaker-target-variant"
_DEFAULT_VARIANT = "AllTraffic"


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One WebSocket data frame the gateway sent to the container (for tests and the debug log)."""

    stream_id: int
    opcode: str  # "text", "binary" or "continuation"
    fin: bool
    size: int


class _Malformed:
    def __init__(self, message: str) -> None:
        self.message = message


_InputItem = codec.InputPart | codec.EndOfInput | _Malformed


class StreamBridge:
    """Runs one request stream: checks the request, opens the WebSocket, pumps both ways."""

    def __init__(
        self, gateway: Gateway, conn: H2ServerConnection, stream_id: int, headers: dict[str, str]
    ) -> None:
        self._gateway = gateway
        self._config: GatewayConfig = gateway.config
        self._conn = conn
        self._sid = stream_id
        self._headers = headers
        self._decoder = codec.EventStreamDecoder()
        self._inbox: asyncio.Queue[_InputItem] = asyncio.Queue()
        self._input_done = False
        self._request_ended = asyncio.Event()  # HTTP/2 END_STREAM from the client
        self._client_closed = False  # the client ended its input, so the gateway closed the WebSocket
        self._ws: FrameConnection | None = None
        self._task = asyncio.create_task(self._run(), name=f"gateway-stream-{stream_id}")

    # -- called by the connection ---------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        if self._input_done:
            return
        try:
            items: list[_InputItem] = [codec.open_envelope(m) for m in self._decoder.feed(data)]
        except codec.MalformedEvent as exc:
            items = [_Malformed(str(exc))]
        for item in items:
            self._inbox.put_nowait(item)
            if not isinstance(item, codec.InputPart):
                self._input_done = True
                break

    def end_input(self) -> None:
        self._request_ended.set()
        if not self._input_done:
            self._input_done = True
            self._inbox.put_nowait(codec.END_OF_INPUT)

    def abort(self) -> None:
        self._task.cancel()

    # -- the stream -------------------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            await self._serve()
        except (StreamGone, asyncio.CancelledError):
            pass
        except Exception:
            logger.exception("stream %d failed", self._sid)
            self._conn.reset_stream(self._sid)
        finally:
            if self._ws is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._ws.close(1001, "client stream ended"), 2.0)
            self._conn.forget(self._sid)

    def _request_error(self) -> codec.OperationError | None:
        h = self._headers
        match = _ROUTE.match(h.get(":path", ""))
        if h.get(":method") != "POST" or match is None:
            return codec.validation_error("Unknown operation: expected POST /endpoints/{name}/"
                                          "invocations-bidirectional-stream.")
        if h.get("content-type", "").split(";")[0].strip() != codec.CONTENT_TYPE:
            return codec.validation_error(f"Content-Type must be {codec.CONTENT_TYPE}.")
        if "authorization" not in h:
            return codec.validation_error("Missing SigV4 Authorization header.")
        problems = validation.bidi_request_problems(
            unquote(match["name"]), h.get(_VARIANT_HEADER), h.get(INVOCATION_PATH_HEADER.lower()),
            h.get(QUERY_STRING_HEADER.lower()))
        if problems:
            return codec.validation_error(validation.message(problems))
        names = self._config.endpoint_names
        if names is not None and unquote(match["name"]) not in names:
            return codec.validation_error(f"Endpoint {unquote(match['name'])} not found.")
        status = self._config.faults.reject_status
        if status is not None:
            return _injected_rejection(status)
        return None

    def _ws_url(self) -> str:
        path = self._headers.get(INVOCATION_PATH_HEADER.lower())
        # Validated: no leading slash, only characters that need no quoting.
        url = self._config.upstream_ws_base() + ("/" + path if path else WS_PATH)
        query = self._headers.get(QUERY_STRING_HEADER.lower())
        return f"{url}?{query}" if query else url

    async def _respond_error(self, error: codec.OperationError) -> None:
        self._conn.send_headers(self._sid, error.headers())
        await self._conn.send_data(self._sid, error.encoded_body(), end_stream=True)

    async def _serve(self) -> None:
        if (error := self._request_error()) is not None:
            await self._respond_error(error)
            return
        url = self._ws_url()
        cfg = self._config
        try:
            ws = await connect(
                url,
                create_connection=FrameConnection,
                open_timeout=cfg.connect_timeout_s,
                ping_interval=None,  # SageMaker's rule, not websockets' (see keepalive)
                max_size=None,
                compression=None,
            )
            assert isinstance(ws, FrameConnection)
            self._ws = ws
        except InvalidStatus as exc:
            status = exc.response.status_code
            await self._respond_error(codec.model_error(
                f"Received client error ({status}) from the model while opening the stream.", status))
            return
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            logger.info("stream %d: container unreachable at %s (%s)", self._sid, url, type(exc).__name__)
            await self._respond_error(codec.model_error("The model container could not be reached."))
            return
        logger.info("stream %d: connected to %s", self._sid, url)
        variant = self._headers.get(_VARIANT_HEADER) or _DEFAULT_VARIANT
        self._conn.send_headers(self._sid, [
            (":status", "200"),
            ("content-type", codec.CONTENT_TYPE),
            ("x-amzn-invoked-production-variant", variant),
        ])
        uplink = asyncio.create_task(self._uplink(ws))
        pinger = asyncio.create_task(keepalive(ws, cfg.ping_interval_s, cfg.ping_misses))
        try:
            await self._downlink(ws)
        finally:
            await cancel_and_wait(uplink)
            await cancel_and_wait(pinger)
        await self._await_request_end()
        self._conn.end_stream(self._sid)

    async def _await_request_end(self) -> None:
        """Keep the response open until the client's HTTP/2 request stream ends (the SDK ends it
        when it closes its input stream, after reading the final event): ending the response
        first makes the SDK's HTTP client abandon its pending writes. Give up after `linger_s`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._config.linger_s):
                await self._request_ended.wait()

    async def _uplink(self, ws: ClientConnection) -> None:
        """Client events to container frames: exactly one WebSocket frame per PayloadPart."""
        in_message = False  # a PARTIAL part opened a fragmented message that is not finished
        latency = self._config.faults.latency_s
        try:
            while True:
                item = await self._inbox.get()
                if isinstance(item, codec.EndOfInput):
                    self._client_closed = True
                    await ws.close(1000)
                    return
                if isinstance(item, _Malformed):
                    logger.warning("stream %d: bad request event: %s", self._sid, item.message)
                    await self._conn.send_data(self._sid, codec.unmodeled_error(
                        "ValidationException", "The request event stream is malformed."))
                    self._client_closed = True
                    await ws.close(1001, "bad request stream")
                    return
                if latency:
                    await asyncio.sleep(latency)
                opcode = "continuation" if in_message else item.kind.value
                await _send_frame(ws, opcode, item.data, fin=not item.partial)
                self._record(opcode, not item.partial, item.data)
                in_message = item.partial
        except ConnectionClosed:
            return  # the downlink reports the close

    async def _downlink(self, ws: FrameConnection) -> None:
        """Container frames to response events, one per frame; the container's close to a
        ModelStreamError."""
        faults = self._config.faults
        count = 0
        while (frame := await ws.frames.get()) is not None:
            count += 1
            if faults.latency_s:
                await asyncio.sleep(faults.latency_s)
            if faults.stall_after is not None and count > faults.stall_after:
                logger.info("stream %d: fault: stalling after %d events", self._sid, faults.stall_after)
                await asyncio.Event().wait()
            if faults.drop_after is not None and count > faults.drop_after:
                logger.info("stream %d: fault: dropping after %d events", self._sid, faults.drop_after)
                self._conn.reset_stream(self._sid)
                raise StreamGone()
            if faults.fail_after is not None and count > faults.fail_after:
                logger.info("stream %d: fault: failing after %d events", self._sid, faults.fail_after)
                await self._conn.send_data(self._sid, codec.internal_stream_failure(
                    "An internal stream failure occurred (injected)."))
                return
            kind = FrameKind.TEXT if frame.text else FrameKind.BINARY
            await self._conn.send_data(self._sid, codec.payload_part(frame.data, kind, complete=frame.fin))
        if self._client_closed:
            return
        code, reason = _close_of(ws)
        logger.info("stream %d: container closed with %s %r", self._sid, code, reason)
        await self._conn.send_data(self._sid, codec.model_stream_error(code, reason))

    def _record(self, opcode: str, fin: bool, data: bytes) -> None:
        record = FrameRecord(self._sid, opcode, fin, len(data))
        self._gateway.frames_to_container.append(record)
        logger.debug("stream %d: to container opcode=%s fin=%s bytes=%d", self._sid, opcode, fin, len(data))


def _close_of(ws: FrameConnection) -> tuple[int, str]:
    """The close code and reason to report: the container's close frame, else the one the stand-in
    sent (its keepalive gave up), else 1006 (the TCP connection dropped without a close)."""
    close: Close | None = ws.protocol.close_rcvd or ws.protocol.close_sent
    if close is None:
        return 1006, "connection to the model lost"
    return close.code, close.reason


async def _send_frame(ws: ClientConnection, opcode: str, data: bytes, *, fin: bool) -> None:
    """Write one data frame. ``ws.send(iterator)`` would end a fragmented message with an extra
    empty FIN frame, so the frames are written through the connection's protocol directly."""
    async with ws.send_context():
        if opcode == "continuation":
            ws.protocol.send_continuation(data, fin=fin)
        elif opcode == "text":
            ws.protocol.send_text(data, fin=fin)
        else:
            ws.protocol.send_binary(data, fin=fin)


def _injected_rejection(status: int) -> codec.OperationError:
    message = f"Rejected by fault injection (HTTP {status})."
    match status:
        case 400:
            return codec.validation_error(message)
        case 424:
            return codec.model_error(message, 500)
        case 503:
            return codec.service_unavailable(message)
        case _:
            return codec.internal_server_error(message)
