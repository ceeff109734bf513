"""bidi_tts.audio: sizes, conversions, WAV headers and files, loudness."""

from __future__ import annotations

import io
import math
import struct
import wave
from pathlib import Path

import numpy as np
import pytest

from bidi_tts import audio
from bidi_tts.wav_file import write_wav


def test_bytes_and_seconds() -> None:
    assert audio.bytes_to_seconds(48_000) == 1.0
    assert audio.bytes_to_seconds(48_000, 16_000) == 1.5
    assert audio.bytes_to_seconds(96_000, 24_000, channels=2) == 1.0
    assert audio.seconds_to_bytes(1.0) == 48_000
    assert audio.seconds_to_bytes(0.1) == 4_800  # not 4_798 from 0.1 * 24000 = 2399.9999...
    assert audio.seconds_to_bytes(0.00001) == 0  # rounded down to whole samples
    assert audio.seconds_to_bytes(1 / 3, 22_050) % 2 == 0
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError):
            audio.seconds_to_bytes(bad)
    with pytest.raises(ValueError):
        audio.bytes_to_seconds(10, 0)


def test_sample_count() -> None:
    assert audio.sample_count(b"\x00" * 10) == 5
    assert audio.sample_count(8, channels=2) == 2
    with pytest.raises(ValueError):
        audio.sample_count(b"\x00" * 3)


def test_float_to_pcm16_clips_instead_of_wrapping() -> None:
    pcm = audio.float_to_pcm16(
        np.array([0.0, 1.0, -1.0, 1.5, -7.0, 0.5, np.nan, np.inf, -np.inf], np.float32)
    )
    assert list(struct.unpack("<9h", pcm)) == [0, 32767, -32768, 32767, -32768, 16384, 0, 32767, -32768]


def test_float_to_pcm16_is_little_endian_and_rounds() -> None:
    assert audio.float_to_pcm16([1 / 32768]) == b"\x01\x00"
    assert audio.float_to_pcm16([-1 / 32768]) == b"\xff\xff"
    assert audio.float_to_pcm16([0.4 / 32768, 0.6 / 32768]) == b"\x00\x00\x01\x00"
    assert audio.float_to_pcm16(np.zeros((2, 3))) == b"\x00" * 12  # any shape, flattened


def test_pcm16_to_float_and_back_is_exact() -> None:
    ints = np.arange(-32768, 32768, dtype="<i2")
    floats = audio.pcm16_to_float(ints.tobytes())
    assert floats.dtype == np.float32 and floats.min() == -1.0 and floats.max() < 1.0
    assert audio.float_to_pcm16(floats) == ints.tobytes()
    with pytest.raises(ValueError):
        audio.pcm16_to_float(b"\x00")


def test_wav_header_fixed_size() -> None:
    h = audio.wav_header(48_000, 24_000)
    assert len(h) == audio.WAV_HEADER_BYTES == 44
    riff, size, wave_id, fmt, fmt_len, tag, ch, rate, byte_rate, align, bits, data, dsize = struct.unpack(
        "<4sI4s4sIHHIIHH4sI", h
    )
    assert (riff, wave_id, fmt, data) == (b"RIFF", b"WAVE", b"fmt ", b"data")
    assert (size, fmt_len, tag, ch, rate, byte_rate, align, bits, dsize) == (
        36 + 48_000, 16, 1, 1, 24_000, 48_000, 2, 16, 48_000)  # fmt: skip


def test_wav_header_streaming_sizes() -> None:
    h = audio.wav_header(streaming=True)
    assert struct.unpack_from("<I", h, 4)[0] == 0xFFFFFFFF
    assert struct.unpack_from("<I", h, 40)[0] == 0xFFFFFFFF
    assert h[:4] == b"RIFF" and h[36:40] == b"data"


def test_wav_header_rejects_nonsense() -> None:
    for kwargs in ({"data_bytes": -2}, {"sample_rate": 0}, {"channels": 0}, {"data_bytes": 2**32}):
        with pytest.raises(ValueError):
            audio.wav_header(**kwargs)  # type: ignore[arg-type]


def test_header_plus_pcm_reads_back_with_the_stdlib(tmp_path: Path) -> None:
    pcm = audio.float_to_pcm16(np.sin(np.linspace(0, 100, 2400)) * 0.5)
    path = tmp_path / "h.wav"
    path.write_bytes(audio.wav_header(len(pcm), 16_000) + pcm)
    with wave.open(str(path)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16_000, 1, 2)
        assert w.readframes(w.getnframes()) == pcm


def test_write_wav_and_read_wav(tmp_path: Path) -> None:
    pcm = np.arange(-500, 500, dtype="<i2").tobytes()
    path = tmp_path / "out.wav"
    write_wav(path, pcm, 22_050)
    data = path.read_bytes()
    assert data == audio.wav_bytes(pcm, 22_050)
    assert data[:44] == audio.wav_header(len(pcm), 22_050)
    assert audio.read_wav(data) == (pcm, 22_050)
    with pytest.raises(ValueError):
        write_wav(tmp_path / "odd.wav", b"\x00", 24_000)
    assert not (tmp_path / "odd.wav").exists()


@pytest.mark.parametrize(("rate", "channels"), [(24_000, 1), (22_050, 1), (16_000, 2)])
def test_wav_bytes_are_what_the_stdlib_writes(rate: int, channels: int) -> None:
    pcm = np.arange(-600, 600, dtype="<i2").tobytes()
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    assert audio.wav_bytes(pcm, rate, channels) == buf.getvalue()
    with pytest.raises(ValueError):
        audio.wav_bytes(b"\x00\x01", rate, channels=2)  # half a stereo frame


def test_read_streamed_wav() -> None:
    pcm = b"\x10\x00\x20\x00" * 100
    assert audio.read_wav(audio.wav_header(streaming=True) + pcm) == (pcm, 24_000)
    # a stream cut mid-sample keeps only whole samples
    assert audio.read_wav(audio.wav_header(streaming=True) + pcm + b"\x01") == (pcm, 24_000)


def test_read_wav_skips_other_chunks() -> None:
    pcm = b"\x01\x00" * 3
    fmt = audio.wav_header(len(pcm))[12:36]
    odd_chunk = b"LIST" + struct.pack("<I", 3) + b"abc" + b"\x00"  # padded to even length
    body = b"WAVE" + fmt + odd_chunk + b"data" + struct.pack("<I", len(pcm)) + pcm
    assert audio.read_wav(b"RIFF" + struct.pack("<I", len(body)) + body) == (pcm, 24_000)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"RIFX" + b"\x00" * 40,
        audio.wav_header(0)[:36],  # no data chunk
        audio.wav_header(0, channels=2),  # stereo, expected mono
        audio.wav_header(0)[:20] + struct.pack("<H", 3) + audio.wav_header(0)[22:],  # IEEE float
        audio.wav_header(0)[:34] + struct.pack("<H", 8) + audio.wav_header(0)[36:],  # 8-bit
    ],
)
def test_read_wav_refuses_what_it_cannot_read(data: bytes) -> None:
    with pytest.raises(audio.WavError):
        audio.read_wav(data)


def test_rms_dbfs_and_silence() -> None:
    t = np.arange(24_000) / 24_000
    full_sine = audio.float_to_pcm16(np.sin(2 * np.pi * 440 * t) * (32767 / 32768))
    assert audio.rms_dbfs(full_sine) == pytest.approx(-3.01, abs=0.02)
    half = audio.float_to_pcm16(np.sin(2 * np.pi * 440 * t) * 0.5)
    assert audio.rms_dbfs(half) == pytest.approx(-9.03, abs=0.02)
    assert audio.rms_dbfs(b"\x00\x00" * 100) == -math.inf
    assert audio.rms_dbfs(b"") == -math.inf
    assert audio.is_silent(b"\x00\x00" * 100) and audio.is_silent(b"")
    assert audio.is_silent(b"\x01\x00" * 100)  # one LSB: about -90 dBFS
    assert not audio.is_silent(half)
    assert audio.is_silent(half, threshold_dbfs=0.0)


def test_first_audible_sample_is_the_first_at_minus_40_dbfs() -> None:
    quiet = struct.pack("<4h", 0, 5, -327, 327)  # all below 0.01 of full scale (327.68)
    assert audio.first_audible_sample(quiet) is None
    assert audio.first_audible_sample(b"") is None and audio.first_audible_sample(b"\x01") is None
    assert audio.first_audible_sample(quiet + struct.pack("<2h", -328, 0)) == 4  # negative counts too
    assert audio.first_audible_sample(struct.pack("<h", -32768)) == 0  # no int16 wrap-around
    assert audio.first_audible_sample(quiet + struct.pack("<h", 1000), threshold_dbfs=-20) is None
    assert audio.first_audible_sample(bytes(600) + struct.pack("<h", 400) + b"\x00") == 300  # odd tail ignored


def _wrapped(x: np.ndarray) -> bytes:
    return np.rint(x * 32767).astype(np.int64).astype("<i2").tobytes()


def test_find_wraps_finds_loud_float_audio_converted_without_clipping() -> None:
    x = 1.2 * np.sin(2 * np.pi * 200 * np.arange(2400) / 24_000)  # 0.1 s, 20 periods past full scale
    wraps = audio.find_wraps(_wrapped(x))
    assert len(wraps) == 80  # into and out of each peak past +1.0 and each trough past -1.0
    first = wraps[0]
    assert first.before >= audio.WRAP_LEVEL and first.after <= -audio.WRAP_LEVEL
    assert first.describe(24_000).startswith(f"a wrapped sample at {first.sample / 24_000:.3f} s into the audio: +")
    assert audio.find_wraps(audio.float_to_pcm16(x)) == []  # the same audio clipped
    assert audio.find_wraps(_wrapped(0.5 * x)) == []  # quiet: nothing to wrap


def test_find_wraps_ignores_loud_speech_that_moves_as_speech_does() -> None:
    # Near full scale and high in pitch (3 kHz), neighbours still differ by far less than 1.5x full scale.
    x = 0.99 * np.sin(2 * np.pi * 3000 * np.arange(24_000) / 24_000)
    assert audio.find_wraps(audio.float_to_pcm16(x)) == []


def test_wrap_detector_counts_across_frames_of_any_size() -> None:
    x = 1.2 * np.sin(2 * np.pi * 200 * np.arange(2400) / 24_000)
    pcm = _wrapped(x)
    whole = audio.find_wraps(pcm)
    detector = audio.WrapDetector()
    for offset in range(0, len(pcm), 333):  # odd sizes: a sample split across two frames
        detector.feed(pcm[offset : offset + 333])
    assert detector.wraps == whole
    assert detector.samples == 2400
    at_seam = audio.WrapDetector()  # a wrap exactly between two frames
    at_seam.feed(np.array([32000], dtype="<i2").tobytes())
    assert at_seam.feed(np.array([-32000], dtype="<i2").tobytes()) == [audio.Wrap(1, 32000, -32000)]
