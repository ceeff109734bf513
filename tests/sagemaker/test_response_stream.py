"""boto3's sagemaker-runtime (InvokeEndpoint, InvokeEndpointWithResponseStream) through the stand-in,
over HTTP/1.1 on the same port as the HTTP/2 bidirectional stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError

from bidi_tts.gateway import GatewayThread
from bidi_tts.local_container import LocalContainer
from bidi_tts.transports.sagemaker import SageMakerTarget
from bidi_tts.transports.sagemaker_errors import SageMakerModelError, SageMakerValidationError, StreamFailure
from bidi_tts.transports.sagemaker_response_stream import invoke_with_response_stream, response_stream_client
from tests.sagemaker.helpers import start_gateway, target_for
from tests.toys.broken import PostErrors500Toy
from tests.toys.good import ServerThread, ToyConfig, ToyContainer
from tests.toys.post_stream import BrokenPostStreamToy, EchoHeadersToy

pytestmark = pytest.mark.timeout(60)
SENTENCES = {"text": "One sentence here. Another sentence there. And a third one to finish."}


def boto_client(gw: GatewayThread) -> Any:
    return boto3.client("sagemaker-runtime", region_name="us-east-1", endpoint_url=gw.url, verify=gw.ca_file,
                        config=Config(retries={"total_max_attempts": 1}))


@pytest.fixture
def slow_gateway(tmp_path: Path) -> Iterator[GatewayThread]:
    """The good toy, synthesizing at half real time (0.1 s frames): a stream that takes ~0.6 s."""
    toy = ToyContainer(ToyConfig(realtime_factor=0.5, audio_s_per_char=0.02))
    with ServerThread(toy.app()) as server, start_gateway(server.url, tmp_path) as gw:
        yield gw


def test_boto3_response_stream_streams_audio_as_it_is_made(slow_gateway: GatewayThread) -> None:
    response = boto_client(slow_gateway).invoke_endpoint_with_response_stream(
        EndpointName="toy-endpoint", Body=json.dumps(SENTENCES), ContentType="application/json")
    assert response["ContentType"] == "audio/pcm"
    assert response["InvokedProductionVariant"] == "AllTraffic"
    parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
    audio = b"".join(parts)
    assert len(parts) > 3 and len(audio) % 2 == 0 and len(audio) > 24000


def test_the_helper_times_chunks_as_they_arrive(slow_gateway: GatewayThread) -> None:
    reply = invoke_with_response_stream(response_stream_client(target_for(slow_gateway)), "toy-endpoint",
                                        json.dumps(SENTENCES).encode())
    chunks = list(reply.chunks())
    first, last = chunks[0][0], chunks[-1][0]
    assert reply.first_byte_s is not None and reply.first_byte_s < last - reply.started
    # Streamed, not buffered: the audio took ~0.7 s to make and arrived over that time.
    assert last - first > 0.3
    assert reply.content_type == "audio/pcm"


def test_invoke_endpoint_returns_the_whole_answer_and_forwards_headers(tmp_path: Path) -> None:
    with ServerThread(EchoHeadersToy().app()) as server, start_gateway(server.url, tmp_path) as gw:
        client = boto_client(gw)
        whole = client.invoke_endpoint(EndpointName="toy-endpoint", Body=b'{"text": "Hi."}',
                                       ContentType="application/json", Accept="application/json",
                                       CustomAttributes="trace=1", TargetVariant="Blue")
        streamed = client.invoke_endpoint_with_response_stream(
            EndpointName="toy-endpoint", Body=b'{"text": "Hi."}', ContentType="application/json",
            Accept="application/json")
        streamed_body = b"".join(e["PayloadPart"]["Bytes"] for e in streamed["Body"])
    answer = json.loads(whole["Body"].read())
    assert whole["ContentType"] == "application/json" and whole["InvokedProductionVariant"] == "Blue"
    assert whole["CustomAttributes"] == "toy=answered"
    assert answer["body"] == {"text": "Hi."}
    assert answer["headers"]["content-type"] == "application/json"
    assert answer["headers"]["accept"] == "application/json"
    assert answer["headers"]["x-amzn-sagemaker-custom-attributes"] == "trace=1"
    assert "authorization" not in answer["headers"]  # the caller's signature stays at the edge
    # The stream route takes Accept as X-Amzn-SageMaker-Accept and still hands the container Accept.
    assert json.loads(streamed_body)["headers"]["accept"] == "application/json"


def test_a_container_error_status_is_424_model_error(tmp_path: Path) -> None:
    with ServerThread(PostErrors500Toy().app()) as server, start_gateway(server.url, tmp_path) as gw:
        client = boto_client(gw)
        with pytest.raises(client.exceptions.ModelError) as info:
            client.invoke_endpoint_with_response_stream(EndpointName="toy-endpoint", Body=b'{"voice": "x"}',
                                                        ContentType="application/json")
        with pytest.raises(SageMakerModelError) as typed:
            invoke_with_response_stream(response_stream_client(target_for(gw)), "toy-endpoint", b"{}")
    response = info.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 424
    assert response["OriginalStatusCode"] == 500
    assert json.loads(response["OriginalMessage"]) == {"error": "'text'"}
    assert typed.value.status == 424 and typed.value.original_status_code == 500


def test_a_stream_that_breaks_midway_is_a_model_stream_error(tmp_path: Path) -> None:
    with ServerThread(BrokenPostStreamToy().app()) as server, start_gateway(server.url, tmp_path) as gw:
        response = boto_client(gw).invoke_endpoint_with_response_stream(
            EndpointName="toy-endpoint", Body=b'{"text": "Hi."}', ContentType="application/json")
        received = []
        with pytest.raises(EventStreamError) as info:
            for event in response["Body"]:
                received.append(event["PayloadPart"]["Bytes"])
        with pytest.raises(StreamFailure) as typed:
            list(invoke_with_response_stream(response_stream_client(target_for(gw)), "toy-endpoint",
                                             b'{"text": "Hi."}').chunks())
    # botocore keeps the exception's type and Message (not its ErrorCode, StreamBroken).
    assert info.value.response["Error"]["Code"] == "ModelStreamError"
    assert "reset or closed" in info.value.response["Error"]["Message"]
    assert len(b"".join(received)) == 2 * 4800  # what the container sent before it broke
    assert typed.value.error_code == "ModelStreamError"


@pytest.mark.parametrize(("params", "field"), [
    ({"EndpointName": "bad_name"}, "endpointName"),
    ({"EndpointName": "e" * 64}, "endpointName"),
    ({"TargetVariant": "no_underscores"}, "targetVariant"),
    ({"CustomAttributes": "x" * 1025}, "customAttributes"),
])
def test_invalid_requests_are_validation_errors(tmp_path: Path, params: dict[str, str], field: str) -> None:
    with ServerThread(EchoHeadersToy().app()) as server, start_gateway(server.url, tmp_path) as gw:
        client = boto_client(gw)
        call: dict[str, Any] = {"EndpointName": "toy-endpoint", "Body": b"{}", "ContentType": "application/json",
                                **params}
        with pytest.raises(client.exceptions.ValidationError) as info:
            client.invoke_endpoint(**call)
        with pytest.raises(SageMakerValidationError):
            invoke_with_response_stream(response_stream_client(target_for(gw)), call.pop("EndpointName"),
                                        b"{}", target_variant=call.get("TargetVariant"),
                                        custom_attributes=call.get("CustomAttributes"))
    assert f"at '{field}' failed to satisfy constraint" in info.value.response["Error"]["Message"]


def test_a_body_over_6_mb_is_refused_before_the_container(tmp_path: Path) -> None:
    toy = EchoHeadersToy()
    with ServerThread(toy.app()) as server, start_gateway(server.url, tmp_path) as gw:
        client = boto_client(gw)
        with pytest.raises(ClientError) as info:
            client.invoke_endpoint(EndpointName="toy-endpoint", Body=b"x" * (6 * 1024 * 1024 + 1))
        # Exactly the limit still goes through (and the connection is still usable after the 413).
        ok = client.invoke_endpoint(EndpointName="toy-endpoint", Body=b'"' + b"x" * (6 * 1024 * 1024 - 2) + b'"',
                                    ContentType="application/json")
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413
    assert json.loads(ok["Body"].read())["body_bytes"] == 6 * 1024 * 1024


def test_the_bidirectional_stream_still_works_on_the_same_port(gateway: GatewayThread,
                                                               target: SageMakerTarget) -> None:
    import asyncio

    from bidi_tts.transports.sagemaker import SageMakerTransport

    async def one() -> dict[str, Any] | None:
        transport = await SageMakerTransport.open(target, open_timeout=15)
        try:
            await transport.send(json.dumps({"text": "Hi."}))
            while True:
                frame = await transport.receive(timeout=10)
                if (control := frame.classify()[1]) is not None and control["type"] == "synthesis_complete":
                    return control
        finally:
            await transport.close()

    assert asyncio.run(one()) is not None
    streamed = boto_client(gateway).invoke_endpoint_with_response_stream(
        EndpointName="toy-endpoint", Body=b'{"text": "Hi."}', ContentType="application/json")
    assert b"".join(e["PayloadPart"]["Bytes"] for e in streamed["Body"])


def test_reference_container_timed_backend_streams_through_boto3(tmp_path: Path) -> None:
    container = LocalContainer(args=["--backend", "timed", "--timed-profile", "h200-eager"])
    try:
        assert container.wait_ready(30).outcome == "ready"
        with start_gateway(container.url, tmp_path) as gw:
            reply = invoke_with_response_stream(response_stream_client(target_for(gw)), "reference",
                                                json.dumps({"text": "Hello there. This is the reference."}).encode())
            audio = b"".join(data for _, data in reply.chunks())
    finally:
        container.stop()
    assert reply.content_type is not None and reply.content_type.startswith("audio/pcm")
    assert len(audio) > 24000 and len(audio) % 2 == 0


def _raw_tls(gw: GatewayThread, alpn: list[str] | None, first: bytes) -> bytes:
    import socket
    import ssl

    context = ssl.create_default_context(cafile=gw.ca_file)
    if alpn is not None:
        context.set_alpn_protocols(alpn)
    port = int(gw.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(first)
        return tls.recv(4096)


def test_without_alpn_the_first_bytes_pick_the_protocol(gateway: GatewayThread) -> None:
    request = b"POST /endpoints/x/invocations HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    assert _raw_tls(gateway, None, request).startswith(b"HTTP/1.1 403 ")  # no SigV4 Authorization
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    answer = _raw_tls(gateway, None, preface)
    assert answer[3] == 0x4 and not answer.startswith(b"HTTP/")  # an HTTP/2 SETTINGS frame
    assert _raw_tls(gateway, ["http/1.1"], request).startswith(b"HTTP/1.1 403 ")
