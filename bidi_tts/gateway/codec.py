"""The `application/vnd.amazon.eventstream` side of the SageMaker runtime stand-in.

Framing (prelude, headers, CRCs) is done by ``smithy_aws_event_stream``, the library the SDK itself
uses; this module only knows which headers InvokeEndpointWithBidirectionalStream puts where:

- Requests: every event the SDK sends is a SigV4 *envelope* whose headers are ``:date`` and
  ``:chunk-signature`` and whose payload is the encoded inner event; an envelope with an empty
  payload ends the input stream. The inner event is ``:event-type: PayloadPart`` with the
  ``DataType`` and ``CompletionState`` headers and the raw bytes as payload.
- Responses: ``PayloadPart`` events (raw bytes, ``DataType`` and ``CompletionState`` headers), or the modeled
  ``ModelStreamError`` / ``InternalStreamFailure`` exception events with a JSON body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from io import BytesIO

from smithy_aws_event_stream.events import Event, EventMessage
from smithy_aws_event_stream.exceptions import EventError

from bidi_tts.frames import FrameKind

CONTENT_TYPE = "application/vnd.amazon.eventstream"
DATA_TYPE_UTF8 = "UTF8"
DATA_TYPE_BINARY = "BINARY"
PARTIAL = "PARTIAL"
COMPLETE = "COMPLETE"

_PRELUDE_BYTES = 12
# Prelude + CRCs (16) + 128 KiB of headers + 16 MiB of payload: the event-stream maximum.
_MAX_EVENT_BYTES = 16 + 128 * 1024 + 16 * 1024 * 1024


class MalformedEvent(Exception):
    """The request body is not a valid event stream, or an event is not what the operation takes."""


@dataclass(frozen=True, slots=True)
class InputPart:
    """One client ``PayloadPart``, unwrapped from its signed envelope."""

    data: bytes
    data_type: str | None
    completion_state: str | None

    @property
    def kind(self) -> FrameKind:
        """The WebSocket opcode SageMaker uses for it (SM-FRAMES-IN): TEXT only for UTF8."""
        return FrameKind.TEXT if self.data_type == DATA_TYPE_UTF8 else FrameKind.BINARY

    @property
    def partial(self) -> bool:
        return self.completion_state == PARTIAL


class EndOfInput:
    """The client closed its input stream (the signed empty envelope)."""


END_OF_INPUT = EndOfInput()


class EventStreamDecoder:
    """Incremental decoder: feed body bytes as they arrive, get whole event messages out."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[EventMessage]:
        self._buffer += data
        messages: list[EventMessage] = []
        while len(self._buffer) >= _PRELUDE_BYTES:
            total = int.from_bytes(self._buffer[:4], "big")
            if total < 16 or total > _MAX_EVENT_BYTES:
                raise MalformedEvent(f"event length {total} is out of range")
            if len(self._buffer) < total:
                break
            raw = bytes(self._buffer[:total])
            del self._buffer[:total]
            try:
                event = Event.decode(BytesIO(raw))
            except (EventError, ValueError) as exc:
                raise MalformedEvent(f"undecodable event ({type(exc).__name__})") from exc
            if event is None:
                raise MalformedEvent("empty event")
            messages.append(event.message)
        return messages

    @property
    def pending(self) -> int:
        """Bytes of an incomplete event still buffered."""
        return len(self._buffer)


def open_envelope(envelope: EventMessage) -> InputPart | EndOfInput:
    """Unwrap one signed request event (the signature itself is not checked)."""
    headers = envelope.headers
    if ":chunk-signature" not in headers or ":date" not in headers:
        raise MalformedEvent("request event is not a signed envelope (:date/:chunk-signature missing)")
    if not envelope.payload:
        return END_OF_INPUT
    try:
        inner = Event.decode(BytesIO(envelope.payload))
    except (EventError, ValueError) as exc:
        raise MalformedEvent(f"undecodable inner event ({type(exc).__name__})") from exc
    if inner is None:
        raise MalformedEvent("empty inner event")
    return _payload_part(inner.message)


def _payload_part(message: EventMessage) -> InputPart:
    headers = message.headers
    if headers.get(":message-type") != "event" or headers.get(":event-type") != "PayloadPart":
        raise MalformedEvent(f"unexpected request event {headers.get(':event-type')!r}")
    data_type = headers.get("DataType")
    completion = headers.get("CompletionState")
    if data_type is not None and data_type not in (DATA_TYPE_UTF8, DATA_TYPE_BINARY):
        raise MalformedEvent(f"DataType must be UTF8 or BINARY, not {data_type!r}")
    if completion is not None and completion not in (PARTIAL, COMPLETE):
        raise MalformedEvent(f"CompletionState must be PARTIAL or COMPLETE, not {completion!r}")
    return InputPart(message.payload, data_type, completion)  # type: ignore[arg-type]


def payload_part(data: bytes, kind: FrameKind, *, complete: bool = True) -> bytes:
    """A response ``PayloadPart`` for one container frame (SM-FRAMES-OUT): ``CompletionState`` is
    ``COMPLETE`` on the frame that ends its message (FIN), ``PARTIAL`` before it."""
    headers = {
        ":message-type": "event",
        ":event-type": "PayloadPart",
        ":content-type": "application/octet-stream",
        "DataType": DATA_TYPE_UTF8 if kind is FrameKind.TEXT else DATA_TYPE_BINARY,
        "CompletionState": COMPLETE if complete else PARTIAL,
    }
    return EventMessage(headers=headers, payload=data).encode()


def response_stream_part(data: bytes) -> bytes:
    """A ``PayloadPart`` of InvokeEndpointWithResponseStream (botocore's model: the bytes only)."""
    headers = {":message-type": "event", ":event-type": "PayloadPart", ":content-type": "application/octet-stream"}
    return EventMessage(headers=headers, payload=data).encode()


def model_stream_error_event(error_code: str, message: str) -> bytes:
    """A ``ModelStreamError`` exception event with the service's own ``ErrorCode`` (``StreamBroken``,
    ``ModelInvocationTimeExceeded``), as InvokeEndpointWithResponseStream sends it."""
    return _exception_event("ModelStreamError", {"Message": message, "ErrorCode": error_code})


def _exception_event(exception_type: str, body: dict[str, str]) -> bytes:
    headers = {
        ":message-type": "exception",
        ":exception-type": exception_type,
        ":content-type": "application/json",
    }
    return EventMessage(headers=headers, payload=json.dumps(body).encode()).encode()


def model_stream_error(close_code: int | None, reason: str) -> bytes:
    """The ``ModelStreamError`` that reports a container close (SM-CLOSE).

    ``ErrorCode`` carries the WebSocket close code as a decimal string and ``Message`` repeats it
    with the reason, so a client can recover the code from either field.
    """
    code = str(close_code) if close_code is not None else "StreamBroken"
    message = f"Model stream closed by the model with WebSocket close code {code}"
    if reason:
        message += f": {reason}"
    return _exception_event("ModelStreamError", {"Message": message, "ErrorCode": code})


def internal_stream_failure(message: str) -> bytes:
    """The ``InternalStreamFailure`` exception event (a failure of the edge itself)."""
    return _exception_event("InternalStreamFailure", {"Message": message})


def unmodeled_error(error_code: str, message: str) -> bytes:
    """An unmodeled ``error`` message (``:error-code``/``:error-message``), as the event-stream
    format defines for failures outside the operation's model."""
    headers = {":message-type": "error", ":error-code": error_code, ":error-message": message}
    return EventMessage(headers=headers).encode()


@dataclass(frozen=True, slots=True)
class OperationError:
    """An HTTP error answer to the operation itself (before any event), restJson1 style."""

    status: int
    error_type: str
    body: Mapping[str, object]

    def headers(self) -> list[tuple[str, str]]:
        return [
            (":status", str(self.status)),
            ("content-type", "application/json"),
            ("x-amzn-errortype", self.error_type),
        ]

    def encoded_body(self) -> bytes:
        return json.dumps(self.body).encode()


def validation_error(message: str) -> OperationError:
    body = {"Message": message, "ErrorCode": "ValidationError"}
    return OperationError(400, "InputValidationError", body)


def model_error(message: str, original_status: int | None = None) -> OperationError:
    body: dict[str, object] = {"Message": message, "ErrorCode": "ModelError"}
    if original_status is not None:
        body["OriginalStatusCode"] = original_status
    return OperationError(424, "ModelError", body)


def service_unavailable(message: str) -> OperationError:
    body = {"Message": message, "ErrorCode": "ServiceUnavailable"}
    return OperationError(503, "ServiceUnavailableError", body)


def internal_server_error(message: str) -> OperationError:
    body = {"Message": message, "ErrorCode": "InternalServerError"}
    return OperationError(500, "InternalServerError", body)
