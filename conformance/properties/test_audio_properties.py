"""Properties of bidi_tts.audio: PCM <-> WAV round trips, float -> int16 never wraps."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bidi_tts import audio
from bidi_tts.wav_file import write_wav

SETTINGS = settings(max_examples=200, deadline=None)

even_pcm = st.binary(max_size=2_000).map(lambda b: b[: len(b) - len(b) % 2])
rates = st.integers(1, 384_000) | st.sampled_from([8_000, 16_000, 22_050, 24_000, 44_100, 48_000])


@SETTINGS
@given(even_pcm, rates, st.booleans())
def test_header_plus_pcm_round_trips(pcm: bytes, rate: int, streaming: bool) -> None:
    wav = audio.wav_header(len(pcm), rate, streaming=streaming) + pcm
    assert audio.read_wav(wav) == (pcm, rate)


@settings(max_examples=50, deadline=None)
@given(even_pcm, rates)
def test_write_wav_read_wav_round_trip(pcm: bytes, rate: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.wav"
        write_wav(path, pcm, rate)
        data = path.read_bytes()
    assert data[: audio.WAV_HEADER_BYTES] == audio.wav_header(len(pcm), rate)
    assert audio.read_wav(data) == (pcm, rate)


@SETTINGS
@given(even_pcm)
def test_int16_float_int16_is_exact(pcm: bytes) -> None:
    floats = audio.pcm16_to_float(pcm)
    assert np.all(np.abs(floats) <= 1.0)
    assert audio.float_to_pcm16(floats) == pcm


@SETTINGS
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=200))
def test_float_to_pcm16_clips_and_keeps_sign_and_order(values: list[float]) -> None:
    pcm = audio.float_to_pcm16(np.array(values, dtype=np.float32))
    assert len(pcm) == 2 * len(values)
    ints = struct.unpack(f"<{len(values)}h", pcm)
    for x, k in zip(values, ints, strict=True):
        if np.isnan(x):
            assert k == 0
        elif x >= 1.0:
            assert k == 32767  # saturates, never wraps to a negative sample
        elif x <= -1.0:
            assert k == -32768
        else:
            assert (k >= 0) == (x >= 0) or k == 0
            assert abs(k - min(x * 32768, 32767.0)) <= 0.5  # nearest sample, clipped at the top
    finite = sorted(v for v in values if not np.isnan(v))
    converted = struct.unpack(f"<{len(finite)}h", audio.float_to_pcm16(np.array(finite, dtype=np.float32)))
    assert list(converted) == sorted(converted)  # monotonic


@SETTINGS
@given(st.integers(0, 10**7).map(lambda n: n * 2), st.sampled_from([8_000, 16_000, 24_000, 48_000]))
def test_bytes_seconds_round_trip(n_bytes: int, rate: int) -> None:
    assert audio.seconds_to_bytes(audio.bytes_to_seconds(n_bytes, rate), rate) == n_bytes
