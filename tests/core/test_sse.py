"""bidi_tts.sse: the WHATWG parsing rules, one by one, plus audio events and the encoder."""

from __future__ import annotations

import base64
import json

import pytest

from bidi_tts.sse import SSEAudioError, SSEDecoder, SSEEvent, decode_audio_events, encode_event


def decode(*chunks: bytes) -> list[SSEEvent]:
    dec = SSEDecoder()
    events = [e for chunk in chunks for e in dec.feed(chunk)]
    dec.close()
    return events


def bytewise(stream: bytes) -> list[SSEEvent]:
    return decode(*(stream[i : i + 1] for i in range(len(stream))))


def test_simple_event_defaults() -> None:
    assert decode(b"data: hello\n\n") == [SSEEvent("message", "hello", "", None)]


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_all_three_line_ends(eol: bytes) -> None:
    stream = b"event: tick" + eol + b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert decode(stream) == [SSEEvent("tick", "a\nb"), SSEEvent("message", "c")]
    assert bytewise(stream) == decode(stream)


def test_cr_then_lf_across_chunks_is_one_line_end() -> None:
    # Were the LF a second line end, it would be an empty line and dispatch "a" early.
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [SSEEvent("message", "a\nb")]
    assert decode(b"data: a\r", b"", b"\n", b"\r", b"\n") == [SSEEvent("message", "a")]


def test_cr_cr_is_two_line_ends() -> None:
    assert decode(b"data: a\r", b"\rdata: b\r\r") == [SSEEvent("message", "a"), SSEEvent("message", "b")]


def test_comments_and_unknown_fields_ignored() -> None:
    stream = b": keep-alive\n:\nfoo: bar\ndata: x\n:another\n\n"
    assert decode(stream) == [SSEEvent("message", "x")]
    assert decode(b": only a comment\n\n") == []


def test_field_without_colon_has_empty_value() -> None:
    assert decode(b"data\n\n") == [SSEEvent("message", "")]
    assert decode(b"data\ndata\ndata: x\n\n") == [SSEEvent("message", "\n\nx")]
    assert decode(b"event\ndata: y\n\n") == [SSEEvent("message", "y")]


def test_exactly_one_leading_space_stripped() -> None:
    assert decode(b"data:  two\n\n") == [SSEEvent("message", " two")]
    assert decode(b"data:none\n\n") == [SSEEvent("message", "none")]
    assert decode(b"data: a: b\n\n") == [SSEEvent("message", "a: b")]
    assert decode(b"data:\tx\n\n") == [SSEEvent("message", "\tx")]


def test_field_names_are_case_sensitive_and_exact() -> None:
    assert decode(b"Data: x\n\n") == []
    assert decode(b"data : x\n\n") == []


def test_empty_data_buffer_is_not_dispatched_and_resets_the_type() -> None:
    assert decode(b"event: ping\n\n") == []
    assert decode(b"event: ping\n\ndata: x\n\n") == [SSEEvent("message", "x")]


def test_data_with_one_trailing_newline_removed_only() -> None:
    assert decode(b"data: a\ndata:\n\n") == [SSEEvent("message", "a\n")]


def test_partial_event_at_end_is_not_dispatched() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: done\n\ndata: cut") == [SSEEvent("message", "done")]
    assert dec.in_event
    assert dec.close() == [] and dec.truncated is True
    assert dec.close() == [] and dec.truncated is True  # idempotent
    dec2 = SSEDecoder()
    dec2.feed(b"data: x\n")  # a complete line but no blank line: still partial
    assert dec2.close() == [] and dec2.truncated
    dec3 = SSEDecoder()
    dec3.feed(b"data: x\n\n")
    assert dec3.close() == [] and not dec3.truncated
    dec4 = SSEDecoder()
    dec4.feed(b"data: x\n\n\xe2\x82")  # cut inside a character
    dec4.close()
    assert dec4.truncated


def test_feed_after_close_refused() -> None:
    dec = SSEDecoder()
    dec.close()
    with pytest.raises(ValueError):
        dec.feed(b"data: x\n\n")


def test_leading_bom_ignored_even_when_split() -> None:
    expected = [SSEEvent("message", "x")]
    assert decode(b"\xef\xbb\xbfdata: x\n\n") == expected
    assert decode(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == expected
    assert decode(b"\xef\xbb", b"\xbfdata: x\n\n") == expected


def test_only_one_bom_and_only_at_start() -> None:
    # A second BOM makes the first field name "\ufeffdata", an unknown field.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n") == []
    assert decode(b"data: x\n\n\xef\xbb\xbfdata: y\n\n") == [SSEEvent("message", "x")]
    assert decode(b"data: \xef\xbb\xbfz\n\n") == [SSEEvent("message", "\ufeffz")]


def test_utf8_split_across_chunks() -> None:
    raw = "data: caf\u00e9 \u2603 \U0001f600\n\n".encode()
    expected = [SSEEvent("message", "caf\u00e9 \u2603 \U0001f600")]
    assert bytewise(raw) == expected
    cut = raw.index(b"\xf0") + 2
    assert decode(raw[:cut], raw[cut:]) == expected


def test_invalid_utf8_replaced() -> None:
    assert decode(b"data: a\xffb\n\n") == [SSEEvent("message", "a\ufffdb")]
    assert bytewise(b"data: \xe2\x82x\n\n") == [SSEEvent("message", "\ufffdx")]


def test_last_event_id_persists_and_can_be_reset() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 9\n\ndata: d\n\n"
    assert [(e.data, e.id) for e in decode(stream)] == [("a", "1"), ("b", "1"), ("c", ""), ("d", "9")]


def test_id_with_nul_is_ignored() -> None:
    assert [e.id for e in decode(b"id: 5\ndata: a\n\nid: 6\x007\ndata: b\n\n")] == ["5", "5"]


def test_id_set_in_a_block_without_data_still_updates_last_event_id() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"id: 42\n\n") == []
    assert dec.last_event_id == "42"


@pytest.mark.parametrize(
    ("line", "retry"),
    [(b"retry: 3000", 3000), (b"retry:0", 0), (b"retry: 12a", None), (b"retry: -5", None), (b"retry: ", None),
     (b"retry: 1.5", None), (b"retry: \xd9\xa3", None), (b"retry:  10", None)],
)  # fmt: skip
def test_retry_only_when_all_ascii_digits(line: bytes, retry: int | None) -> None:
    dec = SSEDecoder()
    events = dec.feed(line + b"\ndata: x\n\n")
    assert events == [SSEEvent("message", "x", "", retry)] and dec.retry == retry


def test_retry_persists_on_the_decoder_not_on_later_events() -> None:
    dec = SSEDecoder()
    events = dec.feed(b"retry: 500\n\ndata: a\n\n")
    assert events == [SSEEvent("message", "a")] and dec.retry == 500


def test_many_events_across_arbitrary_chunks() -> None:
    stream = b"".join(encode_event(f"line {i}\nmore {i}", event="n", id=str(i)) for i in range(50))
    whole = decode(stream)
    assert len(whole) == 50 and whole[7] == SSEEvent("n", "line 7\nmore 7", "7")
    for size in (1, 2, 3, 7, 64):
        assert decode(*(stream[i : i + size] for i in range(0, len(stream), size))) == whole


def test_long_line_in_tiny_fragments_is_linear_enough() -> None:
    payload = b"x" * 200_000
    dec = SSEDecoder()
    for i in range(0, len(payload), 4):
        assert dec.feed(b"data: " + payload[i : i + 4] if i == 0 else payload[i : i + 4]) == []
    (event,) = dec.feed(b"\n\n")
    assert len(event.data) == 200_000


# -- audio events ---------------------------------------------------------------------------------------
def test_decode_audio_events_both_shapes() -> None:
    pcm1, pcm2, pcm3 = b"\x01\x02" * 10, b"\x7b\x00" * 5, b"\xff\xff"
    events = [
        SSEEvent("audio", base64.b64encode(pcm1).decode()),
        SSEEvent("message", json.dumps({"audio": base64.b64encode(pcm2).decode(), "index": 1})),
        SSEEvent("message", '{"status": "progress"}'),
        SSEEvent("done", "[DONE]"),
        SSEEvent("message", "[DONE]"),
        SSEEvent("chunk", json.dumps({"audio": base64.b64encode(pcm3).decode()})),
    ]
    assert decode_audio_events(events) == pcm1 + pcm2 + pcm3


def test_decode_audio_events_from_a_stream_with_multiline_base64() -> None:
    pcm = bytes(range(256)) * 4
    b64 = base64.b64encode(pcm).decode()
    wrapped = "\n".join(b64[i : i + 76] for i in range(0, len(b64), 76))
    stream = encode_event(wrapped, event="audio") + encode_event("bye", event="end")
    assert decode_audio_events(bytewise(stream)) == pcm


def test_decode_audio_events_rejects_bad_base64() -> None:
    with pytest.raises(SSEAudioError):
        decode_audio_events([SSEEvent("audio", "not base64!")])
    with pytest.raises(SSEAudioError):
        decode_audio_events([SSEEvent("message", '{"audio": "QUJ"}')])


def test_audio_key_must_be_a_string() -> None:
    assert decode_audio_events([SSEEvent("message", '{"audio": 5}')]) == b""


# -- encoder ----------------------------------------------------------------------------------------------
def test_encode_event_fields_and_multiline_data() -> None:
    out = encode_event("a\r\nb\rc\nd", event="audio", id="7", retry=100)
    assert out == b"event: audio\nid: 7\nretry: 100\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    assert decode(out) == [SSEEvent("audio", "a\nb\nc\nd", "7", 100)]


def test_encode_event_keeps_leading_space_and_empty_data() -> None:
    assert decode(encode_event(" padded")) == [SSEEvent("message", " padded")]
    assert decode(encode_event("")) == [SSEEvent("message", "")]


def test_encode_bytes_is_base64_audio() -> None:
    pcm = b"\x00\x01" * 100
    assert decode_audio_events(decode(encode_event(pcm, event="audio"))) == pcm


@pytest.mark.parametrize("kwargs", [{"event": "a\nb"}, {"event": "a\r"}, {"id": "1\n2"}, {"id": "a\x00"},
                                    {"retry": -1}, {"retry": True}])  # fmt: skip
def test_encode_event_refuses_what_cannot_round_trip(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        encode_event("x", **kwargs)  # type: ignore[arg-type]
