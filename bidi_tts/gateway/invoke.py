"""``InvokeEndpoint`` and ``InvokeEndpointWithResponseStream`` over HTTP/1.1, as boto3's
``sagemaker-runtime`` client speaks them (botocore's service model, restJson1):

- ``POST /endpoints/{EndpointName}/invocations``: the container's whole answer, ``Content-Type``
  as the container set it.
- ``POST /endpoints/{EndpointName}/invocations-response-stream``: 200 with an
  ``application/vnd.amazon.eventstream`` body (chunked), one ``PayloadPart`` event per piece of
  body the container streams, the container's content type in ``X-Amzn-SageMaker-Content-Type``;
  a container stream that breaks off midway ends with a ``ModelStreamError`` event
  (``ErrorCode`` ``StreamBroken``).
- Both: the body goes to the container's ``POST /invocations`` with ``Content-Type``, ``Accept``
  (from ``X-Amzn-SageMaker-Accept`` on the stream route) and ``X-Amzn-SageMaker-Custom-Attributes``;
  a container error status is a 424 ``ModelError`` with ``OriginalStatusCode``/``OriginalMessage``;
  an unreachable or silent container (``invoke_timeout_s``, 60 s like the service) a 424 too;
  names and sizes are validated first (400 ``ValidationError``, nothing sent to the container).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from typing import Protocol
from urllib.parse import unquote

from bidi_tts.gateway import codec, validation
from bidi_tts.gateway.config import GatewayConfig
from bidi_tts.gateway.http1 import Head, HttpError, body_chunks, chunk, encode_head, read_head
from bidi_tts.gateway.upstream_http import ContainerAnswer, post_invocations

logger = logging.getLogger("bidi_tts.gateway")

_ROUTE = re.compile(r"^/endpoints/(?P<name>[^/?]+)/(?P<op>invocations|invocations-response-stream)(?:\?.*)?$")
MAX_BODY_BYTES = 6 * 1024 * 1024  # BodyBlob's max in the service model (6291456)
_DRAIN_MAX_BYTES = 64 * 1024 * 1024  # a bigger body is not read before the 413: the connection closes
_FORWARDED = ("content-type", "x-amzn-sagemaker-custom-attributes", "x-amzn-sagemaker-inference-id")
_STATUS_TEXT = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 413: "Request Entity Too Large",
                424: "Failed Dependency",
                500: "Internal Server Error", 503: "Service Unavailable"}


class Owner(Protocol):
    config: GatewayConfig


class _Refused(Exception):
    def __init__(self, status: int, error_type: str | None, message: str, *, keep_open: bool = True,
                 **fields: object) -> None:
        super().__init__(message)
        self.status, self.error_type, self.fields = status, error_type, fields
        self.keep_open = keep_open  # False: the request was not read to its end, close after answering


def _validation(message: str) -> _Refused:
    return _Refused(400, "ValidationError", message)


class Http1Connection:
    """Serves the request routes on one TLS connection that did not choose HTTP/2, request after
    request until the client closes it."""

    def __init__(self, owner: Owner, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 prefix: bytes = b"") -> None:
        self._config = owner.config
        self._reader, self._writer = reader, writer
        self._prefix = prefix

    async def serve(self) -> None:
        try:
            while True:
                head = await read_head(self._reader, self._prefix)
                self._prefix = b""
                if head is None:
                    return
                if not await self._one(head) or (head.get("connection") or "").lower() == "close":
                    return
        except (HttpError, ConnectionError, OSError) as exc:
            logger.info("HTTP/1.1 connection ended: %s", exc)
        finally:
            self._writer.close()

    async def _one(self, head: Head) -> bool:
        """Answer one request; False when the connection cannot carry another."""
        request_id = str(uuid.uuid4())
        try:
            body = await self._read_body(head)
            name, streaming = self._route(head)
            self._check(head, name, body)
            await self._invoke(head, body, streaming, request_id)
        except _Refused as refused:
            await self._error(refused, request_id)
            return refused.keep_open
        return True

    async def _read_body(self, head: Head) -> bytes:
        if (head.get("expect") or "").lower() == "100-continue":
            self._writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        length = head.get("content-length")
        too_large = length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES
        if too_large and int(length or 0) > _DRAIN_MAX_BYTES:
            raise _too_large(keep_open=False)  # not worth reading: answer, then close
        data = bytearray()
        async for piece in body_chunks(self._reader, head, until_close=False):
            if not too_large:
                data += piece
                too_large = len(data) > MAX_BODY_BYTES
        if too_large:  # read to its end, so the client reads the answer and the connection stays usable
            raise _too_large(keep_open=True)
        return bytes(data)

    def _route(self, head: Head) -> tuple[str, bool]:
        match = _ROUTE.match(head.start[1])
        if head.start[0] != "POST" or match is None:
            raise _Refused(404, "UnknownOperationException", "Unknown operation: expected POST "
                           "/endpoints/{name}/invocations or /endpoints/{name}/invocations-response-stream.")
        return unquote(match["name"]), match["op"] == "invocations-response-stream"

    def _check(self, head: Head, name: str, body: bytes) -> None:
        if head.get("authorization") is None:
            raise _Refused(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
        problems = (validation.name_problems(name, head.get("x-amzn-sagemaker-target-variant"))
                    + validation.custom_attributes_problems(head.get("x-amzn-sagemaker-custom-attributes")))
        if problems:
            raise _validation(validation.message(problems))
        names = self._config.endpoint_names
        if names is not None and name not in names:
            raise _validation(f"Endpoint {name} not found.")
        if (status := self._config.faults.reject_status) is not None:
            raise _injected(status)

    async def _invoke(self, head: Head, body: bytes, streaming: bool, request_id: str) -> None:
        headers = [(k, v) for k in _FORWARDED if (v := head.get(k)) is not None]
        accept = head.get("x-amzn-sagemaker-accept" if streaming else "accept")
        if accept is not None:
            headers.append(("Accept", accept))
        timeout = self._config.invoke_timeout_s
        try:
            async with post_invocations(self._config.upstream, body, headers, timeout) as answer:
                if not 200 <= answer.status < 300:
                    raise await _model_error(answer)
                variant = head.get("x-amzn-sagemaker-target-variant") or "AllTraffic"
                common = [("x-amzn-RequestId", request_id), ("x-Amzn-Invoked-Production-Variant", variant)]
                if (attributes := answer.head.get("x-amzn-sagemaker-custom-attributes")) is not None:
                    common.append(("X-Amzn-SageMaker-Custom-Attributes", attributes))
                ctype = answer.head.get("content-type") or "application/octet-stream"
                if streaming:
                    await self._stream(answer, [*common, ("X-Amzn-SageMaker-Content-Type", ctype)])
                else:
                    await self._whole(answer, [*common, ("Content-Type", ctype)])
        except TimeoutError:
            raise _Refused(424, "ModelError", "Your invocation timed out while waiting for a response from "
                           f"container primary (after {timeout:g} s).") from None
        except (OSError, HttpError) as exc:
            logger.info("POST /invocations: container unreachable (%s)", exc)
            raise _Refused(424, "ModelError", "The model container could not be reached.") from None

    async def _whole(self, answer: ContainerAnswer, headers: list[tuple[str, str]]) -> None:
        data = bytearray()
        try:
            async for piece in answer.chunks():
                data += piece
                if len(data) > MAX_BODY_BYTES:
                    raise _Refused(424, "ModelError", "The model's response is larger than the 6 MB the "
                                   "service returns; use InvokeEndpointWithResponseStream.")
        except HttpError:
            raise _Refused(424, "ModelError", "The model's response broke off before its end.") from None
        self._writer.write(encode_head("HTTP/1.1 200 OK", [*headers, ("Content-Length", str(len(data)))])
                           + bytes(data))
        await self._writer.drain()

    async def _stream(self, answer: ContainerAnswer, headers: list[tuple[str, str]]) -> None:
        self._writer.write(encode_head("HTTP/1.1 200 OK", [
            *headers, ("Content-Type", codec.CONTENT_TYPE), ("Transfer-Encoding", "chunked")]))
        await self._writer.drain()
        try:
            async for piece in answer.chunks():
                if piece:
                    self._writer.write(chunk(codec.response_stream_part(piece)))
                    await self._writer.drain()
        except HttpError as exc:
            logger.info("POST /invocations: the container's stream broke (%s)", exc)
            self._writer.write(chunk(codec.model_stream_error_event(
                "StreamBroken", "The connection between the client and the model was reset or closed.")))
        self._writer.write(chunk(b""))
        await self._writer.drain()

    async def _error(self, refused: _Refused, request_id: str) -> None:
        body = json.dumps({"message": str(refused), **refused.fields}).encode()
        reason = _STATUS_TEXT.get(refused.status, "Error")
        headers = [("x-amzn-RequestId", request_id), ("Content-Type", "application/json"),
                   ("Content-Length", str(len(body)))]
        if refused.error_type is not None:
            headers.append(("x-amzn-ErrorType", refused.error_type))
        if not refused.keep_open:
            headers.append(("Connection", "close"))
        self._writer.write(encode_head(f"HTTP/1.1 {refused.status} {reason}", headers) + body)
        await self._writer.drain()


async def _model_error(answer: ContainerAnswer) -> _Refused:
    """The 424 SageMaker makes of a container's error status, with what the container said."""
    data = bytearray()
    try:
        async for piece in answer.chunks():
            data += piece
            if len(data) > 4096:
                break
    except HttpError:
        pass
    text = bytes(data[:4096]).decode("utf-8", "replace")
    side = "client" if answer.status < 500 else "server"
    return _Refused(424, "ModelError", f'Received {side} error ({answer.status}) from primary with message "{text}".',
                    OriginalStatusCode=answer.status, OriginalMessage=text)


def _too_large(*, keep_open: bool) -> _Refused:
    # What clients report for a body over 6 MB: a bare 413 "Request Entity Too Large" from the
    # front end, without a modeled error type (botocore's code is then "413").
    return _Refused(413, None, "Request Entity Too Large", keep_open=keep_open)


def _injected(status: int) -> _Refused:
    message = f"Rejected by fault injection (HTTP {status})."
    return {400: _Refused(400, "ValidationError", message),
            424: _Refused(424, "ModelError", message, OriginalStatusCode=500),
            503: _Refused(503, "ServiceUnavailable", message)}.get(status, _Refused(500, "InternalFailure", message))
