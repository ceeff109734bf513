"""PCM helpers: sizes and durations, float <-> s16le conversion, WAV bytes, loudness.

All audio in this project is raw signed 16-bit little-endian PCM (CONTRACT.md TTS-AUDIO), mono
unless a function says otherwise. The float convention is the common one: float ``x`` maps to
``round(x * 32768)`` clipped to the int16 range, and int16 ``k`` maps back to ``k / 32768``, so
int16 -> float -> int16 is exact and 1.0 saturates at 32767 instead of wrapping to -32768.

Bytes in, bytes out: writing a file is the caller's (:func:`bidi_tts.wav_file.write_wav`).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bidi_tts.protocol import CHANNELS, DEFAULT_SAMPLE_RATE, SAMPLE_WIDTH_BYTES

__all__ = [
    "AUDIBLE_DBFS",
    "STREAMING_SIZE",
    "WAV_HEADER_BYTES",
    "WRAP_LEVEL",
    "WavError",
    "WavLayout",
    "Wrap",
    "WrapDetector",
    "bytes_to_seconds",
    "dbfs_to_level",
    "find_wraps",
    "first_audible_sample",
    "float_to_pcm16",
    "is_silent",
    "level_to_dbfs",
    "pcm16_to_float",
    "read_wav",
    "rms_dbfs",
    "sample_count",
    "seconds_to_bytes",
    "wav_bytes",
    "wav_header",
    "wav_layout",
]

#: A sample at or above this level (|x| >= 0.01 of full scale) is audible: the first such sample of
#: a message is where a listener starts hearing it (``ttfa_audible_ms``, the browser measurement).
AUDIBLE_DBFS = -40.0
#: The size written into RIFF and data chunk headers of a WAV stream of unknown length.
STREAMING_SIZE = 0xFFFFFFFF
#: Length of the canonical PCM WAV header written by :func:`wav_header`.
WAV_HEADER_BYTES = 44
_FULL_SCALE = 32768.0
#: A sample-to-sample jump from at least this far above zero to at least this far below it (or back) is
#: a wrapped sample: 0.75 of full scale each way, a step of 1.5x full scale between two neighbours, which
#: speech does not make (it would be a full-scale tone at the Nyquist rate). Float audio past +/-1.0
#: converted to int16 without clipping wraps exactly so: 1.01 becomes -0.99.
WRAP_LEVEL = 24576
_WAVE_FORMAT_PCM = 1
_WAVE_FORMAT_EXTENSIBLE = 0xFFFE


class WavError(ValueError):
    """Bytes that are not a 16-bit PCM WAV file this module can read."""


def _frame_bytes(channels: int) -> int:
    if channels < 1:
        raise ValueError("channels must be at least 1")
    return SAMPLE_WIDTH_BYTES * channels


def bytes_to_seconds(n_bytes: int, sample_rate: int = DEFAULT_SAMPLE_RATE, channels: int = CHANNELS) -> float:
    """Duration of ``n_bytes`` of s16le PCM: 48,000 bytes are one second at 24 kHz mono."""
    if sample_rate <= 0:
        raise ValueError("sample_rate must be positive")
    return n_bytes / (_frame_bytes(channels) * sample_rate)


def seconds_to_bytes(seconds: float, sample_rate: int = DEFAULT_SAMPLE_RATE, channels: int = CHANNELS) -> int:
    """Bytes of s16le PCM for ``seconds``, rounded down to a whole sample frame."""
    if sample_rate <= 0:
        raise ValueError("sample_rate must be positive")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError("seconds must be a finite, non-negative number")
    frame = _frame_bytes(channels)
    # round() first so 0.1 s is not 4799.999... samples because of binary floating point.
    return math.floor(round(seconds * sample_rate, 6)) * frame


def sample_count(pcm: bytes | int, channels: int = CHANNELS) -> int:
    """Number of sample frames in ``pcm`` (bytes, or a byte count); ValueError if not whole."""
    n = pcm if isinstance(pcm, int) else len(pcm)
    frame = _frame_bytes(channels)
    if n % frame:
        raise ValueError(f"{n} bytes is not a whole number of {frame}-byte sample frames")
    return n // frame


def float_to_pcm16(samples: npt.ArrayLike) -> bytes:
    """Float samples (nominal range -1.0..1.0) to s16le bytes, clipping instead of wrapping.

    NaN becomes silence (0); +/-inf and anything beyond full scale saturate.
    """
    x = np.asarray(samples, dtype=np.float64).ravel()
    x = np.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)
    scaled = np.clip(np.rint(x * _FULL_SCALE), -32768, 32767)
    return scaled.astype("<i2").tobytes()


def pcm16_to_float(pcm: bytes) -> npt.NDArray[np.float32]:
    """s16le bytes to float32 samples in [-1.0, 1.0); ValueError on an odd byte count."""
    if len(pcm) % SAMPLE_WIDTH_BYTES:
        raise ValueError(f"{len(pcm)} bytes is not a whole number of 16-bit samples")
    return (np.frombuffer(pcm, dtype="<i2").astype(np.float32) / np.float32(_FULL_SCALE)).astype(np.float32)


def wav_header(
    data_bytes: int = 0,
    sample_rate: int = DEFAULT_SAMPLE_RATE,
    channels: int = CHANNELS,
    *,
    streaming: bool = False,
) -> bytes:
    """The 44-byte header of a 16-bit PCM WAV file holding ``data_bytes`` of audio.

    ``streaming=True`` writes 0xFFFFFFFF into both size fields, for a response whose length is not
    known when the header leaves (CONTRACT.md, ``POST /invocations`` with ``format=wav``).
    """
    frame = _frame_bytes(channels)
    if sample_rate <= 0:
        raise ValueError("sample_rate must be positive")
    if streaming:
        riff_size = data_size = STREAMING_SIZE
    else:
        if data_bytes < 0 or data_bytes + 36 > STREAMING_SIZE:
            raise ValueError("data_bytes out of range for a WAV file")
        riff_size, data_size = 36 + data_bytes, data_bytes
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF", riff_size, b"WAVE",
        b"fmt ", 16, _WAVE_FORMAT_PCM, channels, sample_rate, sample_rate * frame, frame, 16,
        b"data", data_size,
    )  # fmt: skip


def wav_bytes(pcm: bytes, sample_rate: int = DEFAULT_SAMPLE_RATE, channels: int = CHANNELS) -> bytes:
    """A whole WAV file holding s16le ``pcm`` (the bytes the standard library's ``wave`` writes);
    ValueError when ``pcm`` is not a whole number of sample frames."""
    sample_count(pcm, channels)
    return wav_header(len(pcm), sample_rate, channels) + pcm


@dataclass(frozen=True, slots=True)
class WavLayout:
    """What a WAV file's header says: the RIFF size, the fmt chunk, and where the data chunk's bytes start."""

    riff_size: int
    format_tag: int
    channels: int
    sample_rate: int
    bits: int
    data_start: int  # offset of the first PCM byte
    data_size: int  # as the data chunk's header says (:data:`STREAMING_SIZE` for a stream)


def wav_layout(data: bytes) -> WavLayout:
    """Walk the RIFF chunks of ``data`` up to its data chunk; :class:`WavError` when there is no
    RIFF/WAVE magic, no whole fmt chunk before the data chunk, or no data chunk."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise WavError("not a RIFF/WAVE file")
    pos, fmt = 12, None
    while pos + 8 <= len(data):
        chunk_id, size = struct.unpack_from("<4sI", data, pos)
        body = pos + 8
        if chunk_id == b"fmt ":
            if size < 16 or body + 16 > len(data):
                raise WavError("truncated fmt chunk")
            fmt = struct.unpack_from("<HHIIHH", data, body)
        elif chunk_id == b"data":
            if fmt is None:
                raise WavError("data chunk before fmt chunk")
            tag, n_channels, rate, _byte_rate, _align, bits = fmt
            riff_size = struct.unpack_from("<I", data, 4)[0]
            return WavLayout(riff_size, tag, n_channels, rate, bits, body, size)
        pos = body + size + (size & 1)  # chunks are padded to an even length
    raise WavError("no data chunk")


def read_wav(data: bytes, *, channels: int = CHANNELS) -> tuple[bytes, int]:
    """Parse a 16-bit PCM WAV file (also a streamed one with 0xFFFFFFFF sizes) to ``(pcm, rate)``.

    A data chunk whose size is 0xFFFFFFFF or runs past the end takes the rest of the bytes
    (trimmed to whole sample frames). Raises :class:`WavError` for anything else than 16-bit
    integer PCM with ``channels`` channels.
    """
    wav = wav_layout(data)
    if wav.format_tag not in (_WAVE_FORMAT_PCM, _WAVE_FORMAT_EXTENSIBLE) or wav.bits != 16:
        raise WavError(f"not 16-bit integer PCM (format {wav.format_tag}, {wav.bits} bits)")
    if wav.channels != channels:
        raise WavError(f"{wav.channels} channels, expected {channels}")
    if wav.sample_rate <= 0:
        raise WavError("sample rate is zero")
    end = len(data) if wav.data_size == STREAMING_SIZE else min(len(data), wav.data_start + wav.data_size)
    pcm = data[wav.data_start:end]
    return pcm[: len(pcm) - len(pcm) % _frame_bytes(channels)], wav.sample_rate


def dbfs_to_level(dbfs: float) -> float:
    """The linear level, as a fraction of full scale, of ``dbfs`` dB (-20 dBFS is 0.1, 0 dBFS is 1.0)."""
    return float(10.0 ** (dbfs / 20.0))


def level_to_dbfs(level: float) -> float:
    """The dB of a linear level relative to full scale (1.0 is 0 dB); ``-inf`` for 0 or less.

    Also the dB of one level relative to another: ``level_to_dbfs(a / b)``."""
    return 20.0 * math.log10(level) if level > 0 else -math.inf


def rms_dbfs(pcm: bytes) -> float:
    """RMS level of s16le ``pcm`` in dB relative to full scale (a full-scale square wave is 0 dB,
    a full-scale sine about -3.01 dB); ``-inf`` for digital silence or no samples."""
    x = pcm16_to_float(pcm).astype(np.float64)
    if x.size == 0:
        return -math.inf
    return level_to_dbfs(math.sqrt(float(np.mean(x * x))))


def is_silent(pcm: bytes, threshold_dbfs: float = -60.0) -> bool:
    """True when the RMS level of ``pcm`` is below ``threshold_dbfs`` (no samples is silent)."""
    return rms_dbfs(pcm) < threshold_dbfs


def first_audible_sample(pcm: bytes, threshold_dbfs: float = AUDIBLE_DBFS) -> int | None:
    """Index of the first sample of s16le ``pcm`` whose magnitude reaches ``threshold_dbfs``
    (relative to full scale, 32768), or None when every sample is quieter.

    A trailing odd byte is ignored (it is not a whole sample).
    """
    whole = pcm[: len(pcm) - len(pcm) % SAMPLE_WIDTH_BYTES]
    if not whole:
        return None
    # int16 magnitudes, compared in int32 so that -32768 does not wrap; the threshold is rounded
    # up to the first integer level that reaches it.
    level = math.ceil(_FULL_SCALE * dbfs_to_level(threshold_dbfs) - 1e-9)
    loud = np.flatnonzero(np.abs(np.frombuffer(whole, dtype="<i2").astype(np.int32)) >= level)
    return int(loud[0]) if loud.size else None


@dataclass(frozen=True, slots=True)
class Wrap:
    """One wrapped sample: its index (the sample after the jump) and the two samples of the jump."""

    sample: int
    before: int
    after: int

    def seconds(self, sample_rate: int) -> float:
        """Where it is, in seconds from the start of the audio it was counted in."""
        return self.sample / sample_rate

    def describe(self, sample_rate: int) -> str:
        return (f"a wrapped sample at {self.seconds(sample_rate):.3f} s into the audio: {self.before:+d} then "
                f"{self.after:+d} (loud audio wrapped around to the opposite sign instead of clipped at full scale)")


def find_wraps(pcm: bytes, previous: int | None = None, *, level: int = WRAP_LEVEL) -> list[Wrap]:
    """Every wrapped sample of s16le ``pcm`` (TTS-AUDIO): a jump from ``level`` or more to ``-level`` or
    less between neighbouring samples, or back. ``previous`` is the sample before pcm's first (a stream
    checked piece by piece); indices count pcm's samples from 0. A trailing odd byte is ignored."""
    whole = pcm[: len(pcm) - len(pcm) % SAMPLE_WIDTH_BYTES]
    x = np.frombuffer(whole, dtype="<i2").astype(np.int32)
    if previous is not None:
        x = np.concatenate([np.array([previous], dtype=np.int32), x])
    if x.size < 2:
        return []
    a, b = x[:-1], x[1:]
    jumps = np.flatnonzero(((a >= level) & (b <= -level)) | ((a <= -level) & (b >= level)))
    after = 0 if previous is not None else 1  # x[i + 1] is pcm's sample i, or i + 1 with no previous
    return [Wrap(int(i) + after, int(a[i]), int(b[i])) for i in jumps]


class WrapDetector:
    """:func:`find_wraps` over a stream that arrives in pieces (frames of any size, odd ones included):
    carries the last sample and a split byte across pieces; :attr:`wraps` indexed from the stream's
    first sample."""

    def __init__(self, level: int = WRAP_LEVEL) -> None:
        self.level = level
        self.samples = 0  # whole samples seen so far
        self.wraps: list[Wrap] = []
        self._last: int | None = None
        self._odd = b""

    def feed(self, pcm: bytes) -> list[Wrap]:
        """The wraps in this piece (also added to :attr:`wraps`)."""
        data = self._odd + pcm
        cut = len(data) - len(data) % SAMPLE_WIDTH_BYTES
        whole, self._odd = data[:cut], data[cut:]
        if not whole:
            return []
        found = [Wrap(self.samples + w.sample, w.before, w.after)
                 for w in find_wraps(whole, self._last, level=self.level)]
        self._last = int(np.frombuffer(whole[-SAMPLE_WIDTH_BYTES:], dtype="<i2")[0])
        self.samples += len(whole) // SAMPLE_WIDTH_BYTES
        self.wraps.extend(found)
        return found
