"""Properties of the frame rule (CONTRACT.md TTS-CLASSIFY): PCM is audio, JSON objects are control."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bidi_tts.frames import FrameClass, FrameKind, classify_frame, decode_control_frame
from conformance.properties.strategies import (
    json_bytes,
    json_non_objects,
    json_objects,
    pcm_frames,
)

SETTINGS = settings(max_examples=300, deadline=None)
# Recursive JSON is slow to generate; fewer examples keep the file well under its 20 s budget.
JSON_SETTINGS = settings(max_examples=120, deadline=None)
JSON_WS = b" \t\r\n"


def is_whole_json_object(chunk: bytes) -> bool:
    """The contract's rule, written the slow obvious way as the oracle."""
    try:
        return isinstance(json.loads(chunk.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


@SETTINGS
@given(pcm_frames())
def test_pcm_is_control_only_if_it_is_a_whole_json_object(pcm: bytes) -> None:
    control = decode_control_frame(pcm)
    assert (control is not None) == is_whole_json_object(pcm)
    assert classify_frame(pcm, FrameKind.BINARY) == (FrameClass.AUDIO, None)


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_follow_the_rule(chunk: bytes) -> None:
    assert (decode_control_frame(chunk) is not None) == is_whole_json_object(chunk)


@JSON_SETTINGS
@given(json_bytes(json_objects))
def test_json_objects_are_always_control(chunk: bytes) -> None:
    control = decode_control_frame(chunk)
    assert control == json.loads(chunk)
    assert decode_control_frame(chunk.decode("utf-8")) == control
    assert classify_frame(chunk, FrameKind.TEXT)[0] is FrameClass.CONTROL
    assert classify_frame(chunk, None)[0] is FrameClass.CONTROL


@JSON_SETTINGS
@given(json_bytes(json_non_objects))
def test_non_object_json_is_never_control(chunk: bytes) -> None:
    assert decode_control_frame(chunk) is None
    assert classify_frame(chunk, FrameKind.TEXT)[0] is FrameClass.INVALID
    assert classify_frame(chunk, None)[0] is FrameClass.AUDIO


@JSON_SETTINGS
@given(json_bytes(json_objects), st.binary(min_size=1, max_size=3))
def test_json_object_with_extra_bytes_is_audio(chunk: bytes, extra: bytes) -> None:
    # PCM that happens to begin with a JSON object is still audio once any non-whitespace follows.
    tail = extra.lstrip(JSON_WS)
    if not tail:
        return
    assert decode_control_frame(chunk + tail) is None
    trimmed = chunk.rstrip(JSON_WS)
    assert decode_control_frame(trimmed[:-1]) is None  # cut before the closing brace
