"""A cut-off end is judged on the audio itself (bidi_tts_hearing.ending), not on the
recognizer, which completes a cut-off sentence from context (issue 23, point 4).

Proof on espeak-ng speech (made here) and on Kokoro speech (the int8 ONNX route of the reference
container, af_heart; the last second of three messages kept in tests/conformance_suite/data/): no
alarm on the whole messages; every cut at several points of the last sentence that lands inside a
sound is caught. A cut that lands in a pause between words leaves a quiet end, as speech does: the
test shows those are the only misses, and the recognizer's cases judge them (whole words missing).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bidi_tts_conformance.cases.content import CONCURRENT, INTELLIGIBLE, ORDER, SESSION
from bidi_tts_hearing.ending import CUT_DB, ending
from tests.toys.speaking import espeak_available, speak

RATE = 24_000
KOKORO = Path(__file__).with_name("data") / "kokoro_endings.npz"
CUT_POINTS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)  # fractions of the last sentence's sound
TEXTS = [" ".join(ORDER), " ".join(INTELLIGIBLE), *SESSION, *CONCURRENT]


def _level_at(pcm: bytes, at: int) -> float:
    """The level of the original audio in the 20 ms before byte offset `at`, in dB of its speech: well
    above the threshold, a cut there leaves the listener mid-sound; well below, in a pause."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768
    frame = RATE // 100
    frames = len(samples) // frame
    level = np.percentile(np.sqrt(np.mean(samples[: frames * frame].reshape(frames, frame) ** 2, axis=1)), 90)
    before = samples[max(0, at // 2 - RATE // 50): at // 2]
    return float(20 * np.log10(max(np.sqrt(np.mean(before ** 2)), 1e-9) / level))


def _sound_end(pcm: bytes) -> int:
    """Byte offset where the last sound ends (trailing silence excluded)."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768
    frame = RATE // 100
    frames = len(samples) // frame
    envelope = np.sqrt(np.mean(samples[: frames * frame].reshape(frames, frame) ** 2, axis=1))
    loud = np.nonzero(20 * np.log10(np.maximum(envelope, 1e-9) / np.percentile(envelope, 90)) > CUT_DB)[0]
    return int(loud[-1] + 1) * frame * 2


def _check(clips: list[tuple[str, bytes, int]]) -> None:
    """`clips`: (name, pcm, where its last sentence starts, in bytes)."""
    caught = inside = 0
    for name, pcm, last_start in clips:
        whole = ending(pcm, RATE)
        assert whole is not None and not whole.cut, f"false alarm on the whole of {name!r}: {whole}"
        for fraction in CUT_POINTS:
            at = last_start + int((_sound_end(pcm) - last_start) * fraction) // 2 * 2
            cut = ending(pcm[:at], RATE)
            assert cut is not None
            level = _level_at(pcm, at)
            if level > CUT_DB + 10:
                inside += 1
                assert cut.cut, f"{name!r} cut at {fraction:.0%} of its last sentence, mid-sound: {cut}"
                assert "the end is truncated" in cut.describe()
                caught += 1
            elif level < CUT_DB - 10:
                assert not cut.cut  # a pause between words: a quiet end, like speech's own
    assert inside >= len(clips) * len(CUT_POINTS) // 2, "too few cuts landed inside a sound to prove anything"
    assert caught == inside


@pytest.mark.skipif(not espeak_available(), reason="needs espeak-ng (Debian package espeak-ng)")
def test_espeak_speech_cut_at_several_points_is_caught_and_whole_speech_is_not() -> None:
    clips = []
    for text in TEXTS:
        pcm = speak(text, RATE)
        last = text.rsplit(". ", 1)[-1] if text.count(".") > 1 else text
        start = len(pcm) - len(speak(last, RATE)) if last != text else 0
        clips.append((text, pcm, max(0, start - start % 2)))
    _check(clips)


def test_kokoro_speech_cut_at_several_points_is_caught_and_whole_speech_is_not() -> None:
    """The clips are each message's last second (its last sentence's end) as the ONNX route made it."""
    data = np.load(KOKORO)
    clips = [(name, data[name].astype("<i2").tobytes(), 0) for name in data.files]
    assert len(clips) >= 3
    _check(clips)


def test_too_little_or_silent_audio_is_not_judged() -> None:
    assert ending(b"", RATE) is None
    assert ending(bytes(RATE * 2), RATE) is None  # a second of silence
    assert ending(b"\x01\x00" * 50, RATE) is None  # 2 ms
