"""Pure helpers: unit planning (first clause), resampling/encoding, settings, WAV header."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from bidi_tts import protocol
from reference_container.http_routes import wav_header
from reference_container.onset import trim_onset
from reference_container.resample import PcmEncoder
from reference_container.scheduler import Scheduler
from reference_container.segments import (
    MARGIN_S,
    SLACK,
    Pace,
    PlannedUnit,
    first_clause_split,
    plan_segments,
    plan_units,
)
from reference_container.settings import parse_settings
from reference_container.streaming import MessageStats, message_audio, pace_for
from reference_container.unit_cost import UnitCost

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
BLOCK = (  # bench/container/heard.py's four-sentence block
    "Thanks for calling. I checked your account, and I can see two orders placed this week, one on "
    "Monday and one on Wednesday. The first one has already shipped and should arrive tomorrow before "
    "noon. The second is still being packed, and I will email you its tracking number tonight."
)
DEFAULT = "Sure, I can help with that. Your order shipped yesterday and should arrive on Thursday."
CPU = Pace(call_s=0.06, char_s=0.03, speech_s_per_char=0.06)  # about the int8 model on 2 cores
GPU = Pace(call_s=0.01, char_s=0.0005, speech_s_per_char=0.06)


def _replay(units: list[PlannedUnit], pace: Pace) -> tuple[float, list[float]]:
    """Play a plan as the listener hears it, with one worker making the units back to back in exactly
    the predicted times (not the planner's own arithmetic: a clock and a playback end). Returns the
    wait for the first sound and, per later unit, the time it was ready before the listener would
    have run dry less the margin the plan promises (negative: it came too late)."""
    t, end = 0.0, pace.lead_s
    spare: list[float] = []
    for i, unit in enumerate(units):
        t += pace.synth_s(unit.text)
        if i or pace.lead_s:
            spare.append(end - (t + (pace.synth_s(unit.text) * pace.slack + pace.margin_s)))
        joined_after = i + 1 < len(units) and units[i + 1].joined
        end = max(end, t) + pace.audio_s(unit.text, first=i == 0, joined_before=unit.joined,
                                         joined_after=joined_after)
    return pace.synth_s(units[0].text), spare


def _says_all(units: list[PlannedUnit], text: str) -> bool:
    return " ".join(u.text for u in units).split() == text.split()


def test_paced_plan_keeps_whole_sentences_when_the_lead_allows() -> None:
    text = f"Hello there. {LONG} Thanks."
    assert plan_segments(text, 40, GPU) == ["Hello there.", LONG, "Thanks."]
    # a listener already holding 20 s of audio: no cut even on the CPU
    assert plan_segments(text, 40, replace(CPU, lead_s=20.0)) == ["Hello there.", LONG, "Thanks."]


def test_paced_plan_cuts_only_as_much_as_the_lead_needs() -> None:
    text = f"Hello there. {LONG}"
    units = plan_units(text, 40, CPU)
    texts = [u.text for u in units]
    assert _says_all(units, text)  # no word lost or changed
    assert texts[0] == "Hello there." and len(units) > 2
    assert [u.joined for u in units] == [False, False] + [True] * (len(units) - 2)
    _, spare = _replay(units, CPU)
    assert min(spare) >= -1e-9, (texts, spare)  # every unit ready before the listener runs dry
    assert max(len(t) for t in texts[2:]) > len(texts[1])  # units grow as the lead grows
    # the unpaced plan synthesizes the long sentence whole after a short unit: the listener runs dry
    assert min(_replay(plan_units(text, 40), CPU)[1]) < -1.0


def test_first_unit_is_the_shortest_start_the_rest_can_follow() -> None:
    # Fast enough that "I can help with that." is made while "Sure," plays: start with "Sure,".
    quick = Pace(call_s=0.05, char_s=0.012, speech_s_per_char=0.06)
    units = plan_units(DEFAULT, 40, quick)
    assert [u.text for u in units][:2] == ["Sure,", "I can help with that."] and units[1].joined
    wait, spare = _replay(units, quick)
    assert wait < 0.15 and min(spare) >= -1e-9
    # Slower: "Sure," would leave the listener waiting mid-sentence, so the whole first sentence
    # goes first (a later start, no gap), and the second sentence is cut only as the lead needs.
    units = plan_units(DEFAULT, 40, CPU)
    assert units[0].text == "Sure, I can help with that."
    wait, spare = _replay(units, CPU)
    assert min(spare) >= -1e-9 and _says_all(units, DEFAULT)
    sure_first = plan_units(DEFAULT, 40, quick)  # the quick plan replayed on the slow machine runs dry
    assert min(_replay(sure_first, CPU)[1]) < 0


def test_a_large_cost_per_call_is_weighed_against_the_cuts() -> None:
    # Each model call costs 0.6 s before it says anything (a busy machine: the model's padding is
    # synthesized too), so every cut pays that again. The plan leaves the listener less silence than
    # the simple plan, than cutting at every phrase, and than the short pieces a lead-only rule takes.
    busy = Pace(call_s=0.6, char_s=0.036, speech_s_per_char=0.051)
    text = f"Hello there. {LONG}"
    pieces = ["Our new office opens", "on Monday, and every team", "will move in over the following",
              "two weeks, starting with", "the people who sit closest", "to the old kitchen."]
    every_phrase = ["Our new office opens on Monday,", "and every team will move in", "over the following two weeks,",
                    "starting with the people who sit closest", "to the old kitchen."]

    def plan(texts: list[str]) -> list[PlannedUnit]:
        return [PlannedUnit("Hello there.")] + [PlannedUnit(t, i > 0) for i, t in enumerate(texts)]

    def silence(units: list[PlannedUnit]) -> float:
        assert _says_all(units, text)
        return -sum(min(0.0, x) for x in _replay(units, busy)[1])

    chosen = silence(plan_units(text, 40, busy))
    assert chosen < silence(plan(pieces)) - 0.5
    assert chosen <= silence(plan(every_phrase)) + 1e-9
    assert chosen < silence(plan_units(text, 40)) - 0.5  # the simple plan


def test_paced_plan_slower_than_real_time_is_the_simple_plan() -> None:
    overloaded = replace(CPU, char_s=0.07)  # e.g. two sessions on one worker
    text = f"Hello there. {LONG}"
    assert plan_segments(text, 40, overloaded) == plan_segments(text, 40) == ["Hello there.", LONG]
    # even with audio still playing, the first unit stays short: nothing longer can arrive in time
    busy = replace(overloaded, lead_s=3.0)
    assert plan_segments(LONG, 40, busy) == plan_segments(LONG, 40) == ["Our new office opens on Monday,",
                                                                       LONG[len("Our new office opens on Monday, "):]]


def test_paced_plan_never_cuts_when_cutting_is_off() -> None:
    assert plan_segments(f"Hi. {LONG}", 0, CPU) == ["Hi.", LONG]


def test_a_listener_holding_audio_gets_units_sized_to_its_lead() -> None:
    # Mid-turn: 2.5 s still to play. The first unit is as long as that lead covers, not the
    # shortest possible start; with nothing left to play the start is short.
    held = replace(CPU, lead_s=2.5)
    units = plan_units(LONG, 40, held)
    assert len(units[0].text) > 40 and _says_all(units, LONG)
    assert min(_replay(units, held)[1]) >= -1e-9
    assert len(plan_units(LONG, 40, CPU)[0].text) <= 40


def test_listener_plays_what_was_sent_and_resumes_after_running_dry() -> None:
    now = [10.0]
    s = Scheduler(lambda text, voice, speed: iter([]), clock=lambda: now[0])
    assert s.lead_s("a") == 0.0
    s.sent("a", 1.0)
    s.sent("a", 0.5)
    assert s.lead_s("a") == pytest.approx(1.5) and s.lead_s("b") == 0.0
    now[0] = 11.0
    assert s.lead_s("a") == pytest.approx(0.5)
    now[0] = 13.0
    assert s.lead_s("a") == 0.0  # ran dry: never negative
    s.sent("a", 0.2)  # resumes at the new frame, not at the old end
    assert s.lead_s("a") == pytest.approx(0.2)


def test_pace_counts_the_messages_sharing_a_worker() -> None:
    s = Scheduler(lambda text, voice, speed: iter([]), workers=1)
    cost = UnitCost(call_s=0.1, char_s=0.02, speech_s_per_char=0.06)
    with s.admit():
        one = pace_for(s, cost, "a")
        with s.admit():
            two = pace_for(s, cost, "a")
    assert (one.call_s, one.char_s) == (0.1, 0.02)
    assert (two.call_s, two.char_s) == (0.2, 0.04)  # two messages on one worker: each at half speed
    fast = pace_for(s, cost, "a", speed=2.0)  # twice the speed: half the audio and model time per char
    assert fast.speech_s_per_char == pytest.approx(0.03) and fast.char_s == pytest.approx(0.01)
    assert one.lead_s == 0.0


def _padded(text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
    """Like Kokoro: 0.3 s of silence, 0.05 s of tone per character, 0.45 s of silence."""
    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(int(0.05 * len(text) * RATE)) / RATE)
    yield np.concatenate([np.zeros(int(0.3 * RATE)), tone, np.zeros(int(0.45 * RATE))]).astype(np.float32)


async def test_the_listener_counts_the_audio_sent_not_the_audio_made() -> None:
    # The lead that sizes the next message's units is what the client got: the first unit's leading
    # silence and the pause at a cut are not in it (counting the model's audio would promise the
    # listener 0.3 s per message and 0.6 s per cut that it never hears).
    now = [50.0]

    def synth(text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        now[0] += 0.01  # every model call takes some time; nothing else moves the clock
        yield from _padded(text, voice, speed)

    s = Scheduler(synth, clock=lambda: now[0])
    await s.start()
    cost = UnitCost(call_s=0.05, char_s=0.03, speech_s_per_char=0.05)
    try:
        request = protocol.SynthesizeRequest(text=f"Hello there. {LONG}")
        stats = MessageStats("a", request.request_id)
        sent = b"".join([f async for f in message_audio(s, request, stats, model_rate=RATE, first_clause_chars=40,
                                                         cost=cost)])
    finally:
        await s.stop()
    assert stats.units > 2  # paced: the long sentence was cut
    made = sum(0.75 + 0.05 * len(j.text) for j in stats.jobs)
    sent_s = len(sent) / (2 * RATE)
    # the lead is what was sent, less the little time that passed (0.01 s per model call) since
    # the first frame: never the model's audio with the padding that was cut
    assert sent_s - 0.01 * stats.units - 1e-6 <= s.lead_s("a") <= sent_s + 1e-6
    assert s.lead_s("a") < made - 0.25 - 0.5 * (stats.units - 2)
    assert cost.observations == stats.units  # every finished unit taught the cost model


def test_a_machine_whose_calls_scatter_plans_a_wider_margin() -> None:
    # The same mean cost, but calls that miss their prediction by 30% either way: the plan widens
    # its slack to two measured spreads, and the listener does not run dry even when every call of
    # the message is 30% slow; the plan made with the fixed slack does.
    s = Scheduler(lambda text, voice, speed: iter([]), workers=1)
    # the int8 model's cost measured at start-up on the 2-core machine (event=ready, 2026-12-02)
    cost = UnitCost(call_s=0.25, char_s=0.0197, speech_s_per_char=0.0513)
    calm = pace_for(s, cost, "a")
    cost.synth_misses.extend([np.log(1.3), -np.log(1.3)] * 4)
    wary = pace_for(s, cost, "a")
    assert calm.slack == SLACK and wary.slack == pytest.approx(2 * np.log(1.3))
    slow = replace(calm, call_s=1.3 * calm.call_s, char_s=1.3 * calm.char_s, slack=0.0, margin_s=0.0)
    calm_units, wary_units = plan_units(BLOCK, 40, calm), plan_units(BLOCK, 40, wary)
    assert _says_all(wary_units, BLOCK)
    assert min(_replay(calm_units, slow)[1]) < 0  # ran dry
    assert min(_replay(wary_units, slow)[1]) >= 0
    assert len(wary_units) > len(calm_units)  # the price: more, shorter units
    # what the plan predicted the listener holds at each unit (logged beside the measured lead)
    _, spare = _replay(wary_units, wary)
    for unit, left in zip(wary_units[1:], spare, strict=True):
        assert unit.planned_lead_s == pytest.approx(left + wary.synth_s(unit.text) * wary.slack + wary.margin_s)
    assert wary_units[0].planned_lead_s == 0.0  # the listener waited for the first unit
    cost.audio_misses.extend([0.1, -0.1] * 4)  # speech 0.1 s off either way: a wider margin too
    assert pace_for(s, cost, "a").margin_s == pytest.approx(MARGIN_S + 0.2)
