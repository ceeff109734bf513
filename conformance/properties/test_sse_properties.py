"""Properties of bidi_tts.sse: fragment invariance, encode/decode round trips, audio events."""

from __future__ import annotations

import base64
import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bidi_tts.sse import SSEDecoder, SSEEvent, decode_audio_events, encode_event
from conformance.properties.strategies import splits, sse_streams

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(chunks: list[bytes]) -> tuple[list[SSEEvent], bool, str, int | None]:
    dec = SSEDecoder()
    events = [e for chunk in chunks for e in dec.feed(chunk)]
    assert dec.close() == []  # the standard never dispatches at the end of the stream
    return events, dec.truncated, dec.last_event_id, dec.retry


@SETTINGS
@given(st.data(), sse_streams)
def test_any_split_gives_the_same_events(data: st.DataObject, stream: bytes) -> None:
    whole = run([stream])
    assert run(data.draw(splits(stream))) == whole
    assert run([stream[i : i + 1] for i in range(len(stream))]) == whole


@SETTINGS
@given(st.data(), st.binary(max_size=300))
def test_arbitrary_bytes_never_crash_and_split_invariant(data: st.DataObject, stream: bytes) -> None:
    whole = run([stream])
    assert run(data.draw(splits(stream))) == whole
    for event in whole[0]:  # a CR never survives as data; an id with NUL is never taken
        assert "\r" not in event.data and "\0" not in event.id and event.event


_no_line_end = st.text(max_size=12).filter(lambda s: "\r" not in s and "\n" not in s)
_event_specs = st.tuples(
    st.text(max_size=40),  # data: anything, line ends included
    st.none() | _no_line_end,  # event
    st.none() | _no_line_end.filter(lambda s: "\0" not in s),  # id
    st.none() | st.integers(0, 10**9),  # retry
)


@SETTINGS
@given(st.data(), st.lists(_event_specs, max_size=8))
def test_encode_then_decode_round_trip(
    data: st.DataObject, specs: list[tuple[str, str | None, str | None, int | None]]
) -> None:
    stream = b"".join(encode_event(d, event=e, id=i, retry=r) for d, e, i, r in specs)
    expected, last_id = [], ""
    for d, e, i, r in specs:
        last_id = last_id if i is None else i
        expected.append(SSEEvent(e or "message", re.sub(r"\r\n|\r", "\n", d), last_id, r))
    events, truncated, _, _ = run(data.draw(splits(stream)))
    assert events == expected and not truncated


@SETTINGS
@given(st.data(), st.lists(st.binary(max_size=64), max_size=8), st.booleans())
def test_audio_events_round_trip(data: st.DataObject, chunks: list[bytes], as_json: bool) -> None:
    if as_json:
        stream = b"".join(encode_event(json.dumps({"audio": base64.b64encode(c).decode()})) for c in chunks)
    else:
        stream = b"".join(encode_event(c, event="audio") for c in chunks)
    stream += encode_event("[DONE]")
    events, _, _, _ = run(data.draw(splits(stream)))
    assert decode_audio_events(events) == b"".join(chunks)
