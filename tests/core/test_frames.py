"""bidi_tts.frames: the strict JSON-object rule and the kind-aware classifier."""

from __future__ import annotations

import struct

import pytest

from bidi_tts.frames import FrameClass, FrameKind, classify_frame, decode_control_frame


@pytest.mark.parametrize(
    "chunk",
    [
        b'{"type": "synthesis_start", "sample_rate": 24000}',
        '{"type": "error", "code": "busy"}',
        b'  \r\n{"a": 1}\n\t ',
        b"{}",
        '{"t": "caf\u00e9 \u2603"}'.encode(),
        bytearray(b'{"a": [1, 2, {"b": null}]}'),
        memoryview(b'{"a": 1}'),
    ],
)
def test_json_objects_are_control(chunk: bytes | str) -> None:
    assert isinstance(decode_control_frame(chunk), dict)


@pytest.mark.parametrize(
    "chunk",
    [
        b"",
        b"{",
        b"{\x00\x01\xff\xfe}",
        b'{"a": 1}\x00',  # one trailing byte of PCM after something JSON-looking
        b'{"a": 1}{"b": 2}',
        b"[1, 2, 3]",
        b'"a string"',
        b"123",
        b"null",
        b"true",
        "[1]",
        '"x"',
        b'\xef\xbb\xbf{"a": 1}',  # a BOM is not JSON whitespace
        b'{"a": "\xff"}',  # JSON-shaped but not UTF-8
        b'{"a": "\xed\xa0\x80"}',  # an encoded surrogate is not UTF-8
        b"{" * 50_000 + b"}" * 50_000,  # deep nesting: not a crash
        b"\x7b\x00\x7d\x00",  # PCM samples 0x007b, 0x007d
        struct.pack("<4h", 123, -5, 32767, -32768),
    ],
)
def test_everything_else_is_audio(chunk: bytes | str) -> None:
    assert decode_control_frame(chunk) is None


def test_pcm_starting_with_brace_is_audio() -> None:
    pcm = bytes([0x7B]) + bytes(range(256)) * 10 + b"}"
    assert pcm[0] == 0x7B and decode_control_frame(pcm) is None


def test_classify_trusts_binary_kind_even_for_json_bytes() -> None:
    assert classify_frame(b'{"type": "synthesis_start"}', FrameKind.BINARY) == (FrameClass.AUDIO, None)


def test_classify_text_kind() -> None:
    cls, obj = classify_frame('{"type": "synthesis_complete"}', FrameKind.TEXT)
    assert cls is FrameClass.CONTROL and obj == {"type": "synthesis_complete"}
    assert classify_frame(b"\x00\x01", FrameKind.TEXT) == (FrameClass.INVALID, None)
    assert classify_frame("[1]", FrameKind.TEXT) == (FrameClass.INVALID, None)


def test_classify_without_kind_falls_back_to_the_rule() -> None:
    assert classify_frame(b'{"type": "error"}')[0] is FrameClass.CONTROL
    assert classify_frame(b'{"type": "error"}\x00')[0] is FrameClass.AUDIO
    assert classify_frame(b"\x7b\x00" * 100)[0] is FrameClass.AUDIO
