"""Pure helpers: unit planning (first clause), resampling/encoding, settings, WAV header."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from reference_container.http_routes import wav_header
from reference_container.resample import PcmEncoder
from reference_container.segments import first_clause_split, plan_segments
from reference_container.settings import parse_settings

SEEDS = (
    "Welcome to our streaming text-to-speech demo. This system converts text into natural sounding "
    "speech in real time. Each sentence is synthesized as soon as it arrives, so you hear the first "
    "words almost immediately. Thank you for listening to this demonstration."
)


def test_plan_splits_sentences_and_keeps_all_words() -> None:
    units = plan_segments(SEEDS, 40)
    assert len(units) >= 4
    assert " ".join(units).split() == SEEDS.split()


def test_long_first_sentence_is_cut_at_a_clause() -> None:
    text = "The quick brown fox jumps over the lazy dog near the river bank today. Then it sleeps."
    units = plan_segments(text, 40)
    assert units[0] == "The quick brown fox jumps"
    assert units[1].startswith("over the lazy dog")
    assert units[-1] == "Then it sleeps."
    split = first_clause_split("Well, honestly, I think that we should go home before it rains.", 40)
    assert split is not None
    head, rest = split
    assert head == "Well, honestly," and rest.startswith("I think")


def test_word_boundary_cut_leaves_a_real_rest() -> None:
    # No clause mark, no break word after 12 chars: cut at the last space that leaves >= 15 chars.
    assert first_clause_split("Welcome to our streaming text-to-speech demo.", 40) == (
        "Welcome to our streaming", "text-to-speech demo.")
    assert first_clause_split("Supercalifragilisticexpialidocious wonderful.", 40) is None


def test_short_sentences_and_disabled_cut_are_untouched() -> None:
    assert plan_segments("Hi.", 40) == ["Hi."]
    text = "The quick brown fox jumps over the lazy dog near the river bank today."
    assert plan_segments(text, 0) == [text]
    assert first_clause_split("A short one.", 40) is None


@pytest.mark.parametrize("rate", [8000, 16000, 22050, 24000])
def test_encoder_rates_and_lengths(rate: int) -> None:
    tone = (0.5 * np.sin(2 * np.pi * 440 * np.arange(24000) / 24000)).astype(np.float32)
    enc = PcmEncoder(24000, rate)
    out = enc.feed(tone[:7001]) + enc.feed(tone[7001:]) + enc.flush()
    assert len(out) % 2 == 0
    assert abs(len(out) // 2 - rate) <= 2
    samples = np.frombuffer(out, "<i2").astype(np.float32) / 32767
    assert 0.3 < np.sqrt(np.mean(samples[100:-100] ** 2)) < 0.4  # amplitude survives resampling


def test_encoder_uses_the_shared_float_convention() -> None:
    # bidi_tts.audio's convention (x * 32768, clipped, NaN -> 0), not a private copy of it.
    chunk = np.array([2.0, -2.0, 0.0, 0.5, np.nan, -0.25], dtype=np.float32)
    pcm = np.frombuffer(PcmEncoder(24000, 24000).feed(chunk), "<i2")
    assert pcm.tolist() == [32767, -32768, 0, 16384, 0, -8192]


def test_wav_header_streaming_sizes() -> None:
    h = wav_header(sample_rate=16000, streaming=True)
    assert len(h) == 44 and h[:4] == b"RIFF" and h[8:12] == b"WAVE"
    assert struct.unpack("<I", h[4:8])[0] == 0xFFFFFFFF and struct.unpack("<I", h[40:44])[0] == 0xFFFFFFFF
    assert struct.unpack("<I", h[24:28])[0] == 16000


def test_settings_flags_env_and_defaults(tmp_path) -> None:
    s = parse_settings(["--port", "9000", "--backend", "onnx"], env={"KOKORO_VOICES_DIR": str(tmp_path),
                                                                     "MAX_QUEUE": "7"})
    assert (s.port, s.backend, s.voices_dir, s.max_queue) == (9000, "onnx", tmp_path, 7)
    assert parse_settings([], env={}).default_voice == "af_heart"
    with pytest.raises(SystemExit):
        parse_settings(["--synth-workers", "0"], env={})
