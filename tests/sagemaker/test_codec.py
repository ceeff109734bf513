"""The stand-in's event-stream codec against the SDK's own serializers and signer."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from io import BytesIO

import pytest
from aws_sdk_sagemaker_runtime_http2.models import (
    ModelStreamError,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
    ResponsePayloadPart,
    ResponseStreamEventModelStreamError,
    ResponseStreamEventPayloadPart,
)
from aws_sdk_signers import SigV4SigningProperties
from aws_sdk_signers.signers import AsyncEventSigner
from smithy_aws_core.identity import AWSCredentialsIdentity
from smithy_aws_event_stream._private.serializers import EventSerializer
from smithy_aws_event_stream.events import Event, EventHeaderEncoder, EventMessage
from smithy_json import JSONCodec

from bidi_tts.frames import FrameKind
from bidi_tts.gateway import codec
from bidi_tts.transports.sagemaker import parse_close_code


def sdk_message(shape: object, *, client: bool) -> EventMessage:
    serializer = EventSerializer(payload_codec=JSONCodec(), is_client_mode=client)
    shape.serialize(serializer)  # type: ignore[attr-defined]
    result = serializer.get_result()
    assert result is not None
    return result


async def signed(message: EventMessage | None) -> bytes:
    """What the SDK writes on the wire: the event wrapped in a SigV4 envelope (None: the end)."""
    signer = AsyncEventSigner(initial_signature=b"0" * 64, event_encoder_cls=EventHeaderEncoder)
    identity = AWSCredentialsIdentity(access_key_id="AKID", secret_access_key="secret")
    properties = SigV4SigningProperties(region="us-east-1", service="sagemaker")
    if message is None:
        envelope = await signer.sign_empty(event=EventMessage(), identity=identity, properties=properties)
    else:
        envelope = await signer.sign(event=message, identity=identity, properties=properties)
    return envelope.encode()


def test_request_envelopes_from_the_sdk_are_unwrapped() -> None:
    part = RequestPayloadPart(bytes_=b'{"text": "hi"}', data_type="UTF8", completion_state="PARTIAL")
    wire = asyncio.run(signed(sdk_message(RequestStreamEventPayloadPart(value=part), client=True)))
    end = asyncio.run(signed(None))
    decoder = codec.EventStreamDecoder()
    messages = [m for byte in wire + end for m in decoder.feed(bytes([byte]))]  # byte by byte
    assert decoder.pending == 0 and len(messages) == 2
    first = codec.open_envelope(messages[0])
    assert first == codec.InputPart(b'{"text": "hi"}', "UTF8", "PARTIAL")
    assert first.kind is FrameKind.TEXT and first.partial
    assert codec.open_envelope(messages[1]) is codec.END_OF_INPUT


@pytest.mark.parametrize("data_type", [None, "BINARY"])
def test_unset_or_binary_data_type_is_a_binary_frame(data_type: str | None) -> None:
    part = RequestPayloadPart(bytes_=b"x", data_type=data_type)
    wire = asyncio.run(signed(sdk_message(RequestStreamEventPayloadPart(value=part), client=True)))
    (message,) = codec.EventStreamDecoder().feed(wire)
    opened = codec.open_envelope(message)
    assert isinstance(opened, codec.InputPart) and opened.kind is FrameKind.BINARY


def test_unsigned_events_are_refused() -> None:
    part = RequestPayloadPart(bytes_=b"x")
    wire = sdk_message(RequestStreamEventPayloadPart(value=part), client=True).encode()
    (message,) = codec.EventStreamDecoder().feed(wire)
    with pytest.raises(codec.MalformedEvent):
        codec.open_envelope(message)


def test_corrupt_bytes_are_refused() -> None:
    wire = bytearray(asyncio.run(signed(None)))
    wire[-1] ^= 0xFF  # break the message CRC
    with pytest.raises(codec.MalformedEvent):
        codec.EventStreamDecoder().feed(bytes(wire))


@pytest.mark.parametrize(("kind", "data_type"), [(FrameKind.TEXT, "UTF8"), (FrameKind.BINARY, "BINARY")])
@pytest.mark.parametrize("complete", [True, False])
def test_payload_part_matches_the_sdk_model(kind: FrameKind, data_type: str, complete: bool) -> None:
    decoded = Event.decode(BytesIO(codec.payload_part(b"\x7b\x00", kind, complete=complete)))
    assert decoded is not None
    expected = sdk_message(
        ResponseStreamEventPayloadPart(value=ResponsePayloadPart(
            bytes_=b"\x7b\x00", data_type=data_type, completion_state="COMPLETE" if complete else "PARTIAL")),
        client=False,
    )
    assert dict(decoded.message.headers) == dict(expected.headers)
    assert decoded.message.payload == expected.payload


def test_model_stream_error_matches_the_sdk_model() -> None:
    decoded = Event.decode(BytesIO(codec.model_stream_error(1011, "boom")))
    assert decoded is not None
    expected = sdk_message(
        ResponseStreamEventModelStreamError(value=ModelStreamError(message="m", error_code="1011")),
        client=False,
    )
    assert dict(decoded.message.headers) == dict(expected.headers)
    body = json.loads(decoded.message.payload)
    assert body["ErrorCode"] == "1011" and body["Message"].endswith(": boom")
    assert parse_close_code(body["ErrorCode"], body["Message"]) == 1011


@pytest.mark.parametrize(
    ("error_code", "message", "code"),
    [("1000", None, 1000), ("StreamBroken", "closed with 4001 by the model", 4001),
     (None, "connection reset", None), ("ModelInvocationTimeExceeded", "after 600 s", None)],
)
def test_parse_close_code(error_code: str | None, message: str | None, code: int | None) -> None:
    assert parse_close_code(error_code, message) == code


def test_signed_envelope_dates_are_recent() -> None:
    (message,) = codec.EventStreamDecoder().feed(asyncio.run(signed(None)))
    date = message.headers[":date"]
    assert isinstance(date, datetime) and abs((datetime.now(UTC) - date).total_seconds()) < 60
