"""Pure helpers: unit planning (first clause), resampling/encoding, settings, WAV header."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from reference_container.http_routes import wav_header
from reference_container.onset import trim_onset
from reference_container.resample import PcmEncoder
from reference_container.scheduler import Scheduler
from reference_container.segments import Pace, first_clause_split, plan_segments, plan_units
from reference_container.settings import parse_settings
from reference_container.streaming import pace_for

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


ONSET_SLACK_S = 0.0


# -- leading silence: cut before the first audible sample, never into a soft onset -------------------
RATE = 24_000


def _soft_onset(silence_s: float = 0.3, onset_s: float = 0.04) -> tuple[np.ndarray, int, int]:
    """Near-silence (peaks 0.005, under -40 dBFS), then an "h"-like onset rising from -55 to -30
    dBFS over `onset_s`, then a loud vowel. Returns (audio, onset start, first audible sample)."""
    rng = np.random.default_rng(7)
    quiet = (0.005 * rng.uniform(-1, 1, int(silence_s * RATE)) * (rng.uniform(size=int(silence_s * RATE)) < 0.01))
    n = int(onset_s * RATE)
    onset = rng.normal(0, 1, n) * np.logspace(-55 / 20, -30 / 20, n)  # RMS rising from -55 to -30 dBFS
    vowel = 0.5 * np.sin(2 * np.pi * 220 * np.arange(int(0.3 * RATE)) / RATE)
    audio = np.concatenate([quiet, onset, vowel]).astype(np.float32)
    first = int(np.flatnonzero(np.abs(audio) >= 0.01)[0])
    return audio, len(quiet), first


def test_trim_onset_starts_near_the_first_audible_sample_and_keeps_the_onset() -> None:
    audio, onset_at, first = _soft_onset()
    assert first - onset_at > int(0.01 * RATE)  # the onset's quiet start lies well before -40 dBFS
    out = trim_onset(audio, RATE)
    cut = len(audio) - len(out)
    audible = int(np.flatnonzero(np.abs(out) >= 0.01)[0])
    assert audible / RATE <= 0.030 + ONSET_SLACK_S  # heard within ~30 ms of the first sample sent
    assert cut >= int(0.25 * RATE)  # most of the 0.3 s of near-silence is gone
    # every sample from 5 ms before the onset on is kept exactly: nothing of "h" is cut or faded
    keep_from = onset_at - int(0.005 * RATE)
    assert cut <= keep_from
    np.testing.assert_array_equal(out[keep_from - cut + int(0.005 * RATE):], audio[keep_from + int(0.005 * RATE):])
    assert out[0] == 0.0  # faded in from zero: no click


def _keeps_onset(audio: np.ndarray, out: np.ndarray, onset_at: int) -> bool:
    cut = len(audio) - len(out)
    return cut <= onset_at and bool(np.array_equal(out[onset_at - cut:], audio[onset_at:]))


def test_a_cut_at_the_first_audible_sample_would_clip_the_onset() -> None:
    audio, onset_at, first = _soft_onset()
    assert _keeps_onset(audio, trim_onset(audio, RATE), onset_at)
    assert not _keeps_onset(audio, audio[first:], onset_at)  # the naive cut loses the "h"


def test_trim_onset_leaves_inaudible_or_already_tight_audio_alone() -> None:
    quiet = np.full(RATE // 10, 0.005, dtype=np.float32)
    assert trim_onset(quiet, RATE) is quiet  # nothing audible: not known to be leading silence
    tight = np.concatenate([np.zeros(100), 0.5 * np.ones(1000)]).astype(np.float32)
    assert trim_onset(tight, RATE) is tight  # already within KEEP_S


# -- units sized to the listener's lead ---------------------------------------------------------------
LONG = ("Our new office opens on Monday, and every team will move in over the following two weeks, "
        "starting with the people who sit closest to the old kitchen.")


def _fits(units: list[str], pace: Pace) -> list[bool]:
    """Replay a plan: is each unit after the first synthesized before the listener runs dry?"""
    lead, out = pace.lead_s, []
    for i, text in enumerate(units):
        audio = len(text) * pace.audio_s_per_char
        synth = pace.rtf * audio
        if i or pace.lead_s:
            out.append(synth <= lead - pace.margin_s + 1e-9)
        lead = max(0.0, lead - synth) + audio
    return out


def test_paced_plan_keeps_whole_sentences_when_the_lead_allows() -> None:
    text = f"Hello there. {LONG} Thanks."
    fast = Pace(rtf=0.03, audio_s_per_char=0.07)  # a GPU: 150 characters in 0.3 s
    assert plan_segments(text, 40, fast) == ["Hello there.", LONG, "Thanks."]
    # a listener already holding 20 s of audio: no cut even at a slow real-time factor
    assert plan_segments(text, 40, Pace(rtf=0.6, audio_s_per_char=0.07, lead_s=20.0)) == ["Hello there.", LONG,
                                                                                           "Thanks."]


def test_paced_plan_cuts_only_as_much_as_the_lead_needs() -> None:
    text = f"Hello there. {LONG}"
    slow = Pace(rtf=0.3, audio_s_per_char=0.07)
    units = plan_units(text, 40, slow)
    texts = [u.text for u in units]
    assert " ".join(texts).split() == text.split()  # no word lost or changed
    assert texts[0] == "Hello there." and len(units) > 2
    assert [u.joined for u in units] == [False, False] + [True] * (len(units) - 2)
    assert all(_fits(texts, slow)), texts
    assert len(texts[-1]) > len(texts[1])  # units grow as the lead grows
    # the unpaced plan synthesizes the long sentence whole after a 1 s unit: the listener runs dry
    assert not all(_fits(plan_segments(text, 40), slow))


def test_paced_plan_slower_than_real_time_is_the_simple_plan() -> None:
    overloaded = Pace(rtf=1.2, audio_s_per_char=0.07)  # e.g. two sessions on one worker
    text = f"Hello there. {LONG}"
    assert plan_segments(text, 40, overloaded) == plan_segments(text, 40) == ["Hello there.", LONG]
    # even with audio still playing, the first unit stays short: nothing longer can arrive in time
    busy = Pace(rtf=1.2, audio_s_per_char=0.07, lead_s=3.0)
    assert plan_segments(LONG, 40, busy) == plan_segments(LONG, 40) == ["Our new office opens on Monday,",
                                                                       LONG[len("Our new office opens on Monday, "):]]


def test_paced_plan_never_cuts_when_cutting_is_off() -> None:
    assert plan_segments(f"Hi. {LONG}", 0, Pace(rtf=2.0, audio_s_per_char=0.07)) == ["Hi.", LONG]


def test_paced_plan_starts_short_with_no_lead() -> None:
    pace = Pace(rtf=0.3, audio_s_per_char=0.07)
    assert plan_segments(LONG, 40, pace)[0] == "Our new office opens on Monday,"
    assert plan_segments(LONG, 40, Pace(rtf=0.3, audio_s_per_char=0.07, lead_s=5.0))[0] == LONG


def test_pace_counts_the_messages_sharing_a_worker() -> None:
    s = Scheduler(lambda text, voice, speed: iter([]), workers=1, deadline_margin_s=0.4)
    s.estimate.rtf = 0.5
    with s.admit():
        one = pace_for(s, "a")
        with s.admit():
            two = pace_for(s, "a")
    assert (one.rtf, two.rtf) == (0.5, 1.0)  # two messages on one worker: each at half speed
    assert one.lead_s == 0.0 and one.margin_s == 0.4
