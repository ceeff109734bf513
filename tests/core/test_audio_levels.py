"""bidi_tts.audio's level conversions and WAV layout (the parts the suite's cases and detectors share)."""

from __future__ import annotations

import math
import struct

import pytest

from bidi_tts import audio


@pytest.mark.parametrize(("dbfs", "level"), [(0.0, 1.0), (-20.0, 0.1), (-40.0, 0.01), (-6.0206, 0.5)])
def test_dbfs_and_level_convert_both_ways(dbfs: float, level: float) -> None:
    assert audio.dbfs_to_level(dbfs) == pytest.approx(level, rel=1e-4)
    assert audio.level_to_dbfs(level) == pytest.approx(dbfs, abs=1e-3)


def test_no_level_is_minus_infinity() -> None:
    assert audio.level_to_dbfs(0.0) == -math.inf
    assert audio.level_to_dbfs(-1.0) == -math.inf


def test_the_audible_threshold_is_the_level_the_detector_uses() -> None:
    at = round(32768 * audio.dbfs_to_level(audio.AUDIBLE_DBFS))  # 328 of 32768
    assert audio.first_audible_sample(struct.pack("<3h", 0, at - 1, at)) == 2


def test_the_layout_of_a_streamed_wav_header() -> None:
    header = audio.wav_header(sample_rate=16_000, streaming=True)
    wav = audio.wav_layout(header + b"\x01\x00")
    assert (wav.riff_size, wav.data_size) == (audio.STREAMING_SIZE, audio.STREAMING_SIZE)
    assert (wav.format_tag, wav.channels, wav.bits, wav.sample_rate) == (1, 1, 16, 16_000)
    assert wav.data_start == audio.WAV_HEADER_BYTES


def test_the_layout_skips_other_chunks_and_names_what_is_missing() -> None:
    fmt = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, 24_000, 48_000, 2, 16)
    body = b"WAVE" + b"LIST" + struct.pack("<I", 3) + b"abc\x00" + fmt + b"data" + struct.pack("<I", 2) + b"\x00\x00"
    wav = audio.wav_layout(b"RIFF" + struct.pack("<I", len(body)) + body)
    assert wav.data_size == 2 and wav.riff_size == len(body)
    with pytest.raises(audio.WavError, match="no data chunk"):
        audio.wav_layout(b"RIFF" + struct.pack("<I", 4 + len(fmt)) + b"WAVE" + fmt)
    with pytest.raises(audio.WavError, match="not a RIFF/WAVE"):
        audio.wav_layout(b"\x00" * 44)
