"""Properties of bidi_tts.protocol: parse_client_message never raises anything but ProtocolError."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bidi_tts.protocol import (
    ClientMessage,
    ErrorCode,
    Limits,
    ProtocolError,
    SynthesizeRequest,
    parse_client_message,
)
from conformance.properties.strategies import json_values

SETTINGS = settings(max_examples=250, deadline=None)
LIMITS = Limits(voices=frozenset({"af_heart", "am_adam"}))


def check_parse(data: bytes | str) -> ClientMessage | None:
    try:
        return parse_client_message(data, LIMITS)
    except ProtocolError as exc:
        assert exc.code in ErrorCode and exc.message and " " in exc.message
        return None


@SETTINGS
@given(st.binary(max_size=300))
def test_parser_on_arbitrary_bytes(data: bytes) -> None:
    check_parse(data)


@SETTINGS
@given(st.text(max_size=200))
def test_parser_on_arbitrary_text(data: str) -> None:
    check_parse(data)


_FIELDS = ["text", "voice", "speed", "sample_rate", "type", "request_id", "request_timestamp"]
_odd_values = (
    json_values
    | st.sampled_from([10**400, -(10**400), 0, -1, 0.5, 2.0, 24000, 24000.0, 12345, "af_heart", "close",
                       "cancel", "synthesize", "   ", "", "Hello.", "af_heart\n"])
)  # fmt: skip


@settings(max_examples=150, deadline=None)  # recursive JSON values are slow to generate
@given(st.dictionaries(st.sampled_from(_FIELDS), _odd_values), st.booleans(), st.booleans())
def test_parser_on_messages_of_random_field_types(obj: dict[str, Any], as_bytes: bool, nan: bool) -> None:
    text = json.dumps(obj)
    if nan:  # the NaN/Infinity literals Python's json accepts
        text = text.replace("0.5", "NaN").replace("2.0", "Infinity")
    message = check_parse(text.encode() if as_bytes else text)
    if isinstance(message, SynthesizeRequest):  # whatever gets through satisfies the contract's rules
        assert message.text.strip() and message.voice in {"af_heart", "am_adam"}
        assert 0.25 <= message.speed <= 4.0
        assert message.sample_rate in Limits().sample_rates
        assert obj.get("type", "synthesize") == "synthesize"


_clean_text = st.text(st.characters(exclude_categories=["Cc", "Cs"]), min_size=1, max_size=80).filter(
    lambda s: s.strip() == s and bool(s)
)


@SETTINGS
@given(
    _clean_text,
    st.sampled_from(sorted(LIMITS.voices or ())),
    st.floats(0.5, 2.0),
    st.sampled_from(sorted(Limits().sample_rates)),
    st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), min_size=1, max_size=40),
    st.booleans(),
)
def test_valid_requests_round_trip(
    text: str, voice: str, speed: float, rate: int, request_id: str, as_bytes: bool
) -> None:
    request = SynthesizeRequest(text, voice=voice, speed=speed, sample_rate=rate, request_id=request_id)
    payload = request.to_json()
    assert parse_client_message(payload.encode() if as_bytes else payload, LIMITS) == request
