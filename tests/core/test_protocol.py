"""bidi_tts.protocol: every ErrorCode reachable, CONTRACT.md value rules, control frame builders."""

from __future__ import annotations

import json
import math

import pytest

from bidi_tts import protocol
from bidi_tts.protocol import (
    CancelRequest,
    CloseCode,
    CloseRequest,
    ErrorCode,
    Limits,
    ProtocolError,
    SynthesizeRequest,
    parse_client_message,
)


def code_of(data: bytes | str, limits: Limits | None = None) -> ErrorCode:
    with pytest.raises(ProtocolError) as info:
        parse_client_message(data, limits)
    return info.value.code


def synth(data: bytes | str, limits: Limits | None = None) -> SynthesizeRequest:
    request = parse_client_message(data, limits)
    assert isinstance(request, SynthesizeRequest)
    return request


def msg(**fields: object) -> str:
    return json.dumps({"text": "Hello there.", **fields})


# -- every code a client message can earn ---------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"\xff\xfe{}", ErrorCode.INVALID_UTF8),
        (b'{"text": "caf\xe9"}', ErrorCode.INVALID_UTF8),
        (b"\xed\xa0\x80", ErrorCode.INVALID_UTF8),  # an encoded surrogate is not UTF-8
        ("{text: 1}", ErrorCode.INVALID_JSON),
        ('{"text": "a"', ErrorCode.INVALID_JSON),
        ("", ErrorCode.INVALID_JSON),
        ('{"text": "a"} {"text": "b"}', ErrorCode.INVALID_JSON),
        ("[1, 2]", ErrorCode.NOT_AN_OBJECT),
        ('"text"', ErrorCode.NOT_AN_OBJECT),
        ("null", ErrorCode.NOT_AN_OBJECT),
        ("42", ErrorCode.NOT_AN_OBJECT),
        ("{}", ErrorCode.TEXT_REQUIRED),
        ('{"text": ""}', ErrorCode.TEXT_REQUIRED),
        ('{"text": "  \\n\\t "}', ErrorCode.TEXT_REQUIRED),
        ('{"text": "\\u0000\\u0007"}', ErrorCode.TEXT_REQUIRED),
        ('{"text": 5}', ErrorCode.TEXT_REQUIRED),
        ('{"text": ["a"]}', ErrorCode.TEXT_REQUIRED),
        ('{"text": null}', ErrorCode.TEXT_REQUIRED),
        (msg(voice="../../etc/passwd"), ErrorCode.UNKNOWN_VOICE),
        (msg(voice="af_heart\n"), ErrorCode.UNKNOWN_VOICE),
        (msg(voice=7), ErrorCode.UNKNOWN_VOICE),
        (msg(voice=""), ErrorCode.UNKNOWN_VOICE),
        (msg(speed="fast"), ErrorCode.BAD_SPEED),
        (msg(speed=True), ErrorCode.BAD_SPEED),
        (msg(sample_rate="24000"), ErrorCode.BAD_SAMPLE_RATE),
        (msg(type="shout"), ErrorCode.UNKNOWN_TYPE),
        (msg(type=None), ErrorCode.UNKNOWN_TYPE),
        (msg(type=["close"]), ErrorCode.UNKNOWN_TYPE),
        (msg(type="CLOSE"), ErrorCode.UNKNOWN_TYPE),
    ],
)
def test_error_codes(data: bytes | str, code: ErrorCode) -> None:
    assert code_of(data) is code


def test_text_too_long_is_reachable_and_says_the_limit() -> None:
    limits = Limits(max_text_chars=1_000)
    assert synth(json.dumps({"text": "a" * 1_000}), limits).text == "a" * 1_000
    with pytest.raises(ProtocolError) as info:
        parse_client_message(json.dumps({"text": "a" * 1_001}), limits)
    assert info.value.code is ErrorCode.TEXT_TOO_LONG
    assert "1000" in info.value.message


def test_default_limit_accepts_1000_chars_and_refuses_2_mb() -> None:
    assert synth(json.dumps({"text": "word " * 200})).text.startswith("word")
    assert code_of(json.dumps({"text": "a" * 2_000_000})) is ErrorCode.TEXT_TOO_LONG


def test_unknown_voice_against_an_allow_list() -> None:
    limits = Limits(voices=frozenset({"af_heart"}))
    assert synth(msg(voice="af_heart"), limits).voice == "af_heart"
    assert code_of(msg(voice="am_adam"), limits) is ErrorCode.UNKNOWN_VOICE


def test_a_message_without_voice_gets_the_containers_default_voice() -> None:
    limits = Limits(voices=frozenset({"af_heart", "am_adam"}), default_voice="am_adam")
    assert synth(json.dumps({"text": "Hi."}), limits).voice == "am_adam"
    assert synth(json.dumps({"text": "Hi.", "voice": None}), limits).voice == "am_adam"
    assert synth(json.dumps({"text": "Hi.", "voice": "af_heart"}), limits).voice == "af_heart"
    assert synth(json.dumps({"text": "Hi."})).voice == "af_heart"  # the protocol's default


def test_is_voice_name() -> None:
    from bidi_tts.protocol import is_voice_name

    assert is_voice_name("af_heart") and is_voice_name("jf_gongitsune")
    for bad in ("", "AF_heart", "af_heart\n", "../etc/passwd", "af-heart", None, 7):
        assert not is_voice_name(bad), bad


def test_every_client_error_code_is_covered_by_these_tests() -> None:
    # busy, internal (container verdicts) and bad_format (a POST field) are never a parse result.
    parse_codes = set(ErrorCode) - {ErrorCode.BUSY, ErrorCode.INTERNAL, ErrorCode.BAD_FORMAT}
    covered = {
        ErrorCode.INVALID_UTF8, ErrorCode.INVALID_JSON, ErrorCode.NOT_AN_OBJECT, ErrorCode.TEXT_REQUIRED,
        ErrorCode.TEXT_TOO_LONG, ErrorCode.UNKNOWN_VOICE, ErrorCode.BAD_SPEED, ErrorCode.BAD_SAMPLE_RATE,
        ErrorCode.UNKNOWN_TYPE,
    }  # fmt: skip
    assert parse_codes == covered
    for code in ErrorCode:  # every code has a human message that is not a bare word
        assert " " in protocol.ERROR_MESSAGES[code]


# -- values -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("speed", [0.5, 0.75, 1, 1.0, 1.5, 2.0])
def test_speed_range_accepted(speed: float) -> None:
    assert synth(msg(speed=speed)).speed == float(speed)


@pytest.mark.parametrize("speed", [0, 0.0, -1, -0.5, 10.5, 11, 1e9, 10**400, -(10**400), 1e308])
def test_speed_out_of_range_rejected(speed: float) -> None:
    assert code_of(msg(speed=speed)) is ErrorCode.BAD_SPEED


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_speed_rejected(literal: str) -> None:
    data = '{"text": "hi", "speed": ' + literal + "}"
    assert code_of(data) in (ErrorCode.BAD_SPEED, ErrorCode.INVALID_JSON)


def test_sample_rate_24000_accepted_and_default() -> None:
    assert synth(msg(sample_rate=24000)).sample_rate == 24000
    assert synth(msg()).sample_rate == 24000
    assert synth(msg(sample_rate=None)).sample_rate == 24000


@pytest.mark.parametrize("rate", [12345, 0, -24000, 24000.5, "24000", True, [24000], 10**30, 1e400])
def test_bad_sample_rates_rejected(rate: object) -> None:
    assert code_of(msg(sample_rate=rate)) is ErrorCode.BAD_SAMPLE_RATE


def test_sample_rate_nan_rejected() -> None:
    data = '{"text": "hi", "sample_rate": NaN}'
    assert code_of(data) in (ErrorCode.BAD_SAMPLE_RATE, ErrorCode.INVALID_JSON)


# -- type handling -------------------------------------------------------------------------------------
def test_message_types() -> None:
    assert isinstance(parse_client_message('{"type": "close"}'), CloseRequest)
    assert isinstance(parse_client_message('{"type": "cancel", "request_id": "r1"}'), CancelRequest)
    req = parse_client_message(msg(type="synthesize", request_id="abc"))
    assert isinstance(req, SynthesizeRequest) and req.request_id == "abc"
    assert parse_client_message('{"type": "cancel", "request_id": "r1"}').request_id == "r1"


def test_binary_and_text_frames_parse_alike() -> None:
    text = msg(voice="af_bella", speed=1.25, request_id="same")
    assert parse_client_message(text) == parse_client_message(text.encode("utf-8"))
    from_bytearray = parse_client_message(bytearray(text.encode()))  # type: ignore[arg-type]
    assert from_bytearray == parse_client_message(text)


def test_unknown_fields_ignored_and_seed_client_shape_accepted() -> None:
    req = parse_client_message(msg(request_timestamp=1712345678.9, extra={"x": [1]}))
    assert isinstance(req, SynthesizeRequest) and req.text == "Hello there."


def test_request_id_echoed_into_errors() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_client_message(msg(speed=-1, request_id="rid-7"))
    assert info.value.request_id == "rid-7"
    frame = json.loads(protocol.error_from(info.value))
    expected = {"type": "error", "request_id": "rid-7", "code": "bad_speed", "message": info.value.message}
    assert frame == expected


def test_integer_request_id_is_stringified_and_missing_one_generated() -> None:
    assert parse_client_message(msg(request_id=12)).request_id == "12"
    a, b = parse_client_message(msg()), parse_client_message(msg())
    assert isinstance(a, SynthesizeRequest) and isinstance(b, SynthesizeRequest)
    assert a.request_id and a.request_id != b.request_id


def test_text_is_cleaned_of_control_characters() -> None:
    req = parse_client_message(json.dumps({"text": "  a\x00b\x1bc\n d  "}))
    assert isinstance(req, SynthesizeRequest) and req.text == "a b c\n d"


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_nesting_is_invalid_json_not_a_crash(depth: int) -> None:
    assert code_of("[" * depth + "]" * depth) in (ErrorCode.INVALID_JSON, ErrorCode.NOT_AN_OBJECT)
    assert code_of('{"a":' * depth + "1" + "}" * depth) in (ErrorCode.INVALID_JSON, ErrorCode.TEXT_REQUIRED)
    assert code_of(b"[" * depth) is ErrorCode.INVALID_JSON


def test_huge_integer_literal_is_a_protocol_error() -> None:
    data = '{"text": "a", "speed": ' + "9" * 5000 + "}"
    assert code_of(data) in (ErrorCode.INVALID_JSON, ErrorCode.BAD_SPEED)


def test_protocol_error_message_is_human_and_never_the_exception() -> None:
    err = ProtocolError(ErrorCode.TEXT_REQUIRED)
    assert err.message == protocol.ERROR_MESSAGES[ErrorCode.TEXT_REQUIRED]
    assert err.message != "'text'" and err.close_code is None
    fatal = ProtocolError(ErrorCode.INVALID_UTF8, close_code=CloseCode.INVALID_PAYLOAD)
    assert fatal.close_code == 1007


# -- control frame builders -----------------------------------------------------------------------------
def test_synthesis_start_frame() -> None:
    frame = json.loads(protocol.synthesis_start("r1", 24000))
    assert frame == {"type": "synthesis_start", "request_id": "r1", "sample_rate": 24000,
                     "encoding": "pcm_s16le", "channels": 1}  # fmt: skip


def test_synthesis_complete_frame_duration() -> None:
    frame = json.loads(protocol.synthesis_complete("r1", 48_000, 24_000))
    assert frame["audio_bytes"] == 48_000 and math.isclose(frame["duration_s"], 1.0)
    assert "cancelled" not in frame
    assert json.loads(protocol.synthesis_complete("r1", 0, 24_000, cancelled=True))["cancelled"] is True


def test_error_frame_default_message() -> None:
    frame = json.loads(protocol.error_frame(ErrorCode.BUSY))
    assert frame["code"] == "busy" and frame["request_id"] is None and frame["message"]


def test_synthesize_request_round_trips_through_the_parser() -> None:
    req = SynthesizeRequest("Héllo “world”.", voice="bf_emma", speed=0.8, sample_rate=24000, request_id="x")
    assert parse_client_message(req.to_json()) == req
