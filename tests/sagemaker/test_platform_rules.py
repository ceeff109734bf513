"""The stand-in's platform rules, through the real SDK: one PayloadPart per container frame with
CompletionState, request validation before any connection, and SageMaker's keepalive."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from bidi_tts.frames import FrameClass, FrameKind
from bidi_tts.gateway import validation
from bidi_tts.transports import sagemaker
from bidi_tts.transports.base import Frame
from bidi_tts.transports.sagemaker import ModelStreamClosed, SageMakerTransport, SageMakerValidationError
from tests.sagemaker.helpers import start_gateway, target_for
from tests.sagemaker.test_transport_gateway import read_message
from tests.toys.frame_level import DeafToy, FragmentingToy
from tests.toys.raw_frames import RawFramesToy, RawServerThread

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def _parts_seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str | None, str | None, int]]:
    """Record (DataType, CompletionState, size) of every response part the SDK decoded."""
    seen: list[tuple[str | None, str | None, int]] = []
    add = sagemaker._Reassembler.add

    def recording(self: sagemaker._Reassembler, data: bytes, data_type: str | None,
                  completion: str | None) -> Frame | None:
        seen.append((data_type, completion, len(data)))
        return add(self, data, data_type, completion)

    monkeypatch.setattr(sagemaker._Reassembler, "add", recording)
    return seen


async def _one_message(gw_url_target: sagemaker.SageMakerTarget) -> list[Frame]:
    transport = await SageMakerTransport.open(gw_url_target, open_timeout=15)
    try:
        await transport.send(json.dumps({"text": "One sentence. And another one."}))
        return await read_message(transport)
    finally:
        await transport.close()


async def test_fragmented_container_frames_are_parts_the_client_joins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _parts_seen(monkeypatch)
    with RawServerThread(FragmentingToy()) as server, start_gateway(server.url, tmp_path) as gw:
        frames = await _one_message(target_for(gw))
    # The stand-in forwards each of the toy's three frames per message as its own part.
    assert len(seen) == 3 * len(frames)
    for index in range(0, len(seen), 3):
        run = seen[index:index + 3]
        assert [c for _, c, _ in run] == ["PARTIAL", "PARTIAL", "COMPLETE"]
        assert len({t for t, _, _ in run}) == 1  # continuations keep the message's DataType
    # The transport joins them: whole JSON controls, whole-sample PCM, totals that add up.
    kinds = [f.classify()[0] for f in frames]
    assert kinds[0] is FrameClass.CONTROL and kinds[-1] is FrameClass.CONTROL
    audio = [f for f in frames if f.kind is FrameKind.BINARY]
    assert audio and all(len(f.payload) % 2 == 0 for f in audio)
    _, complete = frames[-1].classify()
    assert complete is not None and complete["audio_bytes"] == sum(len(f.payload) for f in audio)


async def test_a_client_ignoring_completion_state_breaks_on_fragments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the rule guards against: a client taking each part as a message (the old transport)."""

    def every_part_whole(self: sagemaker._Reassembler, data: bytes, data_type: str | None,
                         completion: str | None) -> Frame | None:
        return Frame(data, sagemaker._frame_kind(data_type), time.perf_counter())

    monkeypatch.setattr(sagemaker._Reassembler, "add", every_part_whole)
    with RawServerThread(FragmentingToy()) as server, start_gateway(server.url, tmp_path) as gw:
        transport = await SageMakerTransport.open(target_for(gw), open_timeout=15)
        try:
            await transport.send(json.dumps({"text": "Hi."}))
            first = await transport.receive(timeout=10)
        finally:
            await transport.close()
    assert first.kind is FrameKind.TEXT
    assert first.classify()[1] is None  # a third of synthesis_start: not a JSON object


async def test_unfragmented_frames_are_single_complete_parts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _parts_seen(monkeypatch)
    with RawServerThread(RawFramesToy()) as server, start_gateway(server.url, tmp_path) as gw:
        frames = await _one_message(target_for(gw))
    assert [c for _, c, _ in seen] == ["COMPLETE"] * len(frames)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"invocation_path": "/invocations-bidirectional-stream"}, "modelInvocationPath"),  # leading slash
        ({"invocation_path": "a" * 101}, "modelInvocationPath"),
        ({"invocation_path": "a//b"}, "modelInvocationPath"),
        ({"invocation_path": "a b"}, "modelInvocationPath"),
        ({"query_string": "novalue"}, "modelQueryString"),
        ({"query_string": "a=1&"}, "modelQueryString"),
        ({"query_string": "a=" + "x" * 2047}, "modelQueryString"),
        ({"target_variant": "v" * 64}, "targetVariant"),
        ({"target_variant": "bad_variant"}, "targetVariant"),
        ({"endpoint_name": "bad_name"}, "endpointName"),
        ({"endpoint_name": "-leading-dash"}, "endpointName"),
        ({"endpoint_name": "e" * 64}, "endpointName"),
    ],
)
async def test_invalid_requests_are_refused_before_the_container(
        tmp_path: Path, fields: dict[str, str], field: str) -> None:
    toy = RawFramesToy()
    with RawServerThread(toy) as server, start_gateway(server.url, tmp_path) as gw:
        options = dict(fields)
        name = options.pop("endpoint_name", None)
        target = target_for(gw, **options)
        if name is not None:
            target.endpoint_name = name
        with pytest.raises(SageMakerValidationError) as info:
            await SageMakerTransport.open(target, open_timeout=15)
    assert info.value.status == 400
    assert f"at '{field}' failed to satisfy constraint" in str(info.value)
    assert toy.frames_received == [] and gw.gateway.frames_to_container == []


async def test_valid_path_and_query_reach_the_container(tmp_path: Path) -> None:
    toy = RawFramesToy()
    with RawServerThread(toy) as server, start_gateway(server.url, tmp_path) as gw:
        target = target_for(gw, invocation_path="invocations-bidirectional-stream",
                            query_string="voice=af_heart&x=", target_variant="Variant-1")
        frames = await _one_message(target)
    assert frames[-1].classify()[1]["type"] == "synthesis_complete"  # type: ignore[index]


async def test_validation_rules_accept_the_limits() -> None:
    assert validation.bidi_request_problems("e" * 63, "v" * 63, "a" * 100, "k=" + "v" * 2046) == []
    assert validation.bidi_request_problems("my-tts--endpoint", "AllTraffic", "x/y.z-_", "a=1&b=") == []
    assert len(validation.bidi_request_problems("bad_name", None, "/x", None)) == 2
    assert validation.message(["A", "B"]) == "2 validation errors detected: A; B"


async def test_a_container_that_never_answers_pings_is_closed_after_five(tmp_path: Path) -> None:
    toy = DeafToy()
    interval = 0.2
    with RawServerThread(toy) as server, start_gateway(server.url, tmp_path, ping_interval_s=interval) as gw:
        transport = await SageMakerTransport.open(target_for(gw), open_timeout=15)
        opened = time.monotonic()
        try:
            with pytest.raises(ModelStreamClosed) as info:
                await transport.receive(timeout=20 * interval)
            elapsed = time.monotonic() - opened
        finally:
            await transport.close()
    assert info.value.code == 1011 and "keepalive" in info.value.reason
    # Five pings, one an interval (not one ping left outstanding until a long timeout).
    assert toy.pings == 5
    assert 5 * interval <= elapsed < 6 * interval + 1.0


async def test_a_container_that_answers_pings_stays_open(tmp_path: Path) -> None:
    toy = RawFramesToy()
    interval = 0.1
    with RawServerThread(toy) as server, start_gateway(server.url, tmp_path, ping_interval_s=interval) as gw:
        transport = await SageMakerTransport.open(target_for(gw), open_timeout=15)
        try:
            await asyncio.sleep(10 * interval)  # twice the pings a deaf container survives
            await transport.send(json.dumps({"text": "Still here."}))
            frames = await read_message(transport)
        finally:
            await transport.close()
    assert frames[-1].classify()[1]["type"] == "synthesis_complete"  # type: ignore[index]
