"""Hypothesis strategies shared by the property tests: JSON values, PCM frames, SSE streams, splits."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import strategies as st

# Strict JSON scalars: no NaN/Infinity (not JSON), no lone surrogates (not UTF-8 encodable).
json_scalars: st.SearchStrategy[Any] = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)

json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=12,
)

json_objects: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
    st.text(max_size=10), json_values, max_size=6
)

json_non_objects: st.SearchStrategy[Any] = json_scalars | st.lists(json_values, max_size=4)


@st.composite
def json_bytes(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> bytes:
    """A value serialised the ways real peers do: compact or indented, ASCII-escaped or raw UTF-8,
    with optional JSON whitespace around it."""
    value = draw(values)
    indent = draw(st.sampled_from([None, 0, 2]))
    separators = draw(st.sampled_from([None, (",", ":")]))
    text = json.dumps(value, ensure_ascii=draw(st.booleans()), indent=indent, separators=separators)
    ws = st.text(alphabet=" \t\r\n", max_size=3)
    return (draw(ws) + text + draw(ws)).encode("utf-8")


@st.composite
def pcm_frames(draw: st.DrawFn) -> bytes:
    """s16le PCM frames: random samples, often starting with 0x7b ('{') and sometimes ending in '}'."""
    samples = draw(st.binary(min_size=0, max_size=400))
    if len(samples) % 2:
        samples = samples[:-1]
    if draw(st.booleans()):
        samples = b"\x7b" + samples[1:] if samples else b"\x7b\x00"
    if draw(st.booleans()) and len(samples) >= 2:
        samples = samples[:-2] + draw(st.sampled_from([b"}\x00", b"\x00}", b" }"]))
    return samples


@st.composite
def splits(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut at arbitrary points (empty pieces included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=max(1, min(40, len(data) + 2)))))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


# Pieces that exercise every branch of the SSE parser when glued together in any order.
_SSE_PIECES = [
    b"data: ", b"data:", b"data", b"event: ", b"event:tick", b"id: ", b"id: 7", b"id: a\x00b", b"retry: ",
    b"retry: 150", b"retry: 1x", b":", b": comment", b"foo: bar", b"\n", b"\r", b"\r\n", b"\n\n", b"\r\r",
    b"\xef\xbb\xbf", b"\xef\xbb", b"\xbf", b"\xe2\x82\xac", b"\xe2\x82", b"\xf0\x9f\x98\x80", b"\xff", b" ",
    b"x", b"hello world", b"{\"audio\": \"AAE=\"}",
]  # fmt: skip

sse_streams: st.SearchStrategy[bytes] = st.lists(
    st.sampled_from(_SSE_PIECES) | st.binary(max_size=8), max_size=60
).map(b"".join)
