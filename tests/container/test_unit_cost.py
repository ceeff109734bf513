"""The container's measure of what a unit costs: calibration on a known cost, following a machine."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from reference_container.unit_cost import CALIBRATION_TEXTS, UnitCost, calibrate, fit, padding

RATE = 24_000


def _speech(lead_s: float, speech_s: float, tail_s: float) -> np.ndarray:
    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(int(speech_s * RATE)) / RATE)
    return np.concatenate([np.zeros(int(lead_s * RATE)), tone, np.zeros(int(tail_s * RATE))]).astype(np.float32)


class KnownCost:
    """Takes exactly 0.08 s + 0.02 s per character on a fake clock; speaks 0.3 s + 0.05 s/char + 0.45 s."""

    sample_rate = RATE

    def __init__(self, now: list[float]) -> None:
        self.now = now

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        self.now[0] += 0.08 + 0.02 * len(text)
        yield _speech(0.3, 0.05 * len(text), 0.45)


def test_calibration_recovers_a_known_cost_and_the_padding() -> None:
    now = [0.0]
    cost = calibrate(KnownCost(now), "af_heart", clock=lambda: now[0])  # type: ignore[arg-type]
    assert cost.call_s == pytest.approx(0.08, abs=1e-6) and cost.char_s == pytest.approx(0.02, abs=1e-6)
    assert cost.speech_s_per_char == pytest.approx(0.05, rel=0.02)
    assert cost.lead_pad_s == pytest.approx(0.3, abs=0.01) and cost.tail_pad_s == pytest.approx(0.45, abs=0.01)
    assert len({len(t) for t in CALIBRATION_TEXTS}) == 2  # two lengths: a fixed part and a slope


def test_fit_never_goes_negative() -> None:
    # A longer text that happened to be faster (a noisy machine): no negative slope or fixed part.
    audio = _speech(0.3, 1.0, 0.45)
    cost = fit([(20.0, 0.5, audio), (80.0, 0.4, audio)], RATE)
    assert cost.char_s > 0 and cost.call_s >= 0
    cost = fit([(20.0, 0.1, audio), (80.0, 1.9, audio)], RATE)  # the line crosses zero before 20 chars
    assert cost.call_s >= 0 and cost.synth_s(80) == pytest.approx(1.9, rel=0.3)


def test_observations_follow_a_machine_that_slows_down() -> None:
    cost = UnitCost(call_s=0.05, char_s=0.02)
    before = cost.synth_s(50)
    for _ in range(12):  # the machine is now twice as slow
        cost.observe(50, 2 * before)
    assert cost.synth_s(50) == pytest.approx(2 * before, rel=0.05)
    assert cost.synth_s(10) / cost.synth_s(50) == pytest.approx(0.25 / 1.05, rel=1e-6)  # shape kept
    cost.observe(50, 0.0)  # a unit with no time (cancelled) teaches nothing
    cost.observe(0, 1.0)
    assert cost.synth_s(50) == pytest.approx(2 * before, rel=0.05)


def test_observed_audio_updates_the_speaking_rate_and_padding() -> None:
    cost = UnitCost(speech_s_per_char=0.06, lead_pad_s=0.3, tail_pad_s=0.45)
    for _ in range(20):
        cost.observe(40, cost.synth_s(40), _speech(0.2, 40 * 0.08, 0.3), RATE)
    assert cost.speech_s_per_char == pytest.approx(0.08, rel=0.02)
    assert (cost.lead_pad_s, cost.tail_pad_s) == (pytest.approx(0.2, abs=0.01), pytest.approx(0.3, abs=0.01))


def test_padding_splits_silence_and_speech() -> None:
    lead, speech, tail = padding(_speech(0.25, 1.0, 0.5), RATE)
    assert (lead, speech, tail) == (pytest.approx(0.25, abs=0.005), pytest.approx(1.0, abs=0.005),
                                    pytest.approx(0.5, abs=0.005))
    assert padding(np.zeros(RATE, np.float32), RATE) == (0.0, 0.0, 1.0)


def test_units_of_different_lengths_correct_a_wrong_shape() -> None:
    # Calibrated in a busy moment (a small fixed part, a steep slope); the machine really costs
    # 0.3 s per call + 0.02 s per character. A dozen units of mixed lengths put the shape right.
    cost = UnitCost(call_s=0.05, char_s=0.05)
    for chars in [20, 60, 35, 90, 25, 70, 40, 110, 30, 80, 50, 45]:
        cost.observe(chars, 0.3 + 0.02 * chars)
    assert cost.call_s == pytest.approx(0.3, rel=0.02) and cost.char_s == pytest.approx(0.02, rel=0.02)
    same = UnitCost(call_s=0.05, char_s=0.05)
    for _ in range(12):  # all one length: the slope cannot be told from the fixed part; only the scale moves
        same.observe(50, 1.3)
    assert same.synth_s(50) == pytest.approx(1.3, rel=0.05) and same.call_s / same.char_s == pytest.approx(1.0)


def test_the_cost_measures_how_far_its_own_predictions_miss() -> None:
    steady = UnitCost(call_s=0.1, char_s=0.02, speech_s_per_char=0.05)
    for _ in range(8):  # every unit takes exactly what was predicted and speaks what was predicted
        steady.observe(40.0, steady.synth_s(40.0), _speech(0.3, 0.05 * 40, 0.45), RATE)
    assert steady.synth_spread == pytest.approx(0.0, abs=1e-6)
    assert steady.audio_spread_s == pytest.approx(0.0, abs=0.01)

    scattered = UnitCost(call_s=0.1, char_s=0.02, speech_s_per_char=0.05)
    for _ in range(3):
        scattered.observe(40.0, 1.3 * scattered.synth_s(40.0))
    assert scattered.synth_spread == 0.0  # too few misses to tell: the plan keeps its floor
    for k in range(12):  # calls 30% slower and faster by turns; speech 0.2 s off by turns
        scattered.observe(40.0, (1.3 if k % 2 else 1 / 1.3) * scattered.synth_s(40.0),
                          _speech(0.3, 2.0 + (0.2 if k % 2 else -0.2), 0.45), RATE)
    assert scattered.synth_spread == pytest.approx(np.log(1.3), rel=0.1)
    assert 0.15 <= scattered.audio_spread_s <= 0.3
