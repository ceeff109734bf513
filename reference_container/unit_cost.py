"""What one synthesis unit costs and how much audio it makes, measured by the container itself.

A Kokoro model call takes about a fixed time (G2P, the call's own overhead) plus a time per
character, and speaks the model's own padding (about 0.3 s of near-silence before the speech and
0.45 s after it) plus about a fixed time per character. :func:`calibrate` measures both at
start-up, from two calls of different lengths after the warm-up (the two points give the fixed
part and the slope); :meth:`UnitCost.observe` then follows the machine: once the recent units
differ enough in length, the fixed part and the slope are refitted from them (the newest weighing
most), and until then each finished unit moves the predicted cost toward what it really took (a
moving average of the ratio, applied to both parts), so a machine that gets busier is followed
within a few units and a start-up measurement spoiled by a busy moment is corrected.

The cost also knows how far its own predictions miss: :attr:`UnitCost.synth_spread` (the relative
error of the predicted model time) and :attr:`UnitCost.audio_spread_s` (the error of the predicted
speech, in seconds) over the recent units, so the plan keeps a margin as wide as this machine's
scatter (a call that takes 34% longer than its prediction on a busy moment, a short clause that
speaks 0.1 s less than its length says).

Lengths are in characters divided by the speaking speed (speed 2 says the same text in half the
time, and costs about half as much). :mod:`reference_container.segments` plans units with it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from reference_container.synthesizers.base import Synthesizer

#: What the calibration speaks after the warm-up: a short and a longer unit.
CALIBRATION_TEXTS = (
    "Sure, I can help.",
    "Your order shipped yesterday, and it should arrive on Thursday before noon.",
)
SILENCE_LEVEL = 0.01  # the level under which the model's padding lies (as streaming trims it)
WINDOW = 32  # recent units the fixed part and the slope are refitted from
MIN_FIT_UNITS = 6
MIN_FIT_SPREAD = 15.0  # characters between the shortest and the longest of them
DECAY = 0.9  # weight of a unit one step older
MIN_SPREAD_UNITS = 4  # recent misses before the spread is measured rather than assumed


@dataclass(slots=True)
class UnitCost:
    """Predicted model time and audio of a unit of `chars` characters (at speed 1)."""

    call_s: float = 0.06  # fixed time per model call
    char_s: float = 0.025  # model time per character
    speech_s_per_char: float = 0.06  # speech per character, padding excluded
    lead_pad_s: float = 0.3  # the model's near-silence before the speech
    tail_pad_s: float = 0.45  # and after it
    weight: float = 0.3  # of the newest observation in the moving averages
    observations: int = 0
    recent: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=WINDOW))
    # How far recent predictions missed: log(model time / predicted), and speech seconds made
    # minus predicted.
    synth_misses: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    audio_misses: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))

    def synth_s(self, chars: float) -> float:
        return self.call_s + self.char_s * chars

    def audio_s(self, chars: float) -> float:
        """The model's audio for the unit, its padding included."""
        return self.lead_pad_s + self.speech_s_per_char * chars + self.tail_pad_s

    @property
    def synth_spread(self) -> float:
        """Relative spread of a unit's model time around its prediction (root mean square of the
        recent log ratios; 0 until ``MIN_SPREAD_UNITS`` units were observed)."""
        return _rms(self.synth_misses)

    @property
    def audio_spread_s(self) -> float:
        """Spread of a unit's speech around its prediction, in seconds (0 until measured)."""
        return _rms(self.audio_misses)

    @property
    def rtf(self) -> float:
        """Model seconds per audio second for a typical sentence (60 characters)."""
        return self.synth_s(60) / self.audio_s(60)

    def observe(self, chars: float, synth_s: float, audio: np.ndarray | None = None, rate: int = 24_000) -> None:
        """A unit of `chars` characters took `synth_s` and made `audio` (float, full scale 1)."""
        if chars <= 0 or synth_s <= 0:
            return
        w = self.weight
        self.synth_misses.append(float(np.log(synth_s / max(self.synth_s(chars), 1e-6))))
        self.recent.append((chars, synth_s))
        self.observations += 1
        fitted = _recent_fit(self.recent)
        if fitted is not None:  # units of different lengths: the fixed part and the slope themselves
            self.call_s, self.char_s = fitted
        else:  # otherwise keep the shape and follow the scale
            ratio = min(4.0, max(0.25, synth_s / self.synth_s(chars)))
            scale = 1.0 + w * (ratio - 1.0)
            self.call_s *= scale
            self.char_s *= scale
        if audio is not None:
            lead, speech, tail = padding(audio, rate)
            if speech > 0:
                self.audio_misses.append(speech - self.speech_s_per_char * chars)
                self.speech_s_per_char = (1 - w) * self.speech_s_per_char + w * speech / chars
                self.lead_pad_s = (1 - w) * self.lead_pad_s + w * lead
                self.tail_pad_s = (1 - w) * self.tail_pad_s + w * tail


def _rms(misses: deque[float]) -> float:
    if len(misses) < MIN_SPREAD_UNITS:
        return 0.0
    return float(np.sqrt(np.mean(np.square(np.asarray(misses)))))


def _recent_fit(recent: deque[tuple[float, float]]) -> tuple[float, float] | None:
    """(fixed part, slope) of the recent units, the newest weighing most (``DECAY`` per unit of
    age), or None while they are too few or too alike in length to tell the two apart."""
    if len(recent) < MIN_FIT_UNITS:
        return None
    x = np.array([c for c, _ in recent])
    y = np.array([t for _, t in recent])
    if np.ptp(x) < MIN_FIT_SPREAD:
        return None
    weights = DECAY ** np.arange(len(recent))[::-1]
    slope, icpt = np.polyfit(x, y, 1, w=np.sqrt(weights))
    if slope <= 0 or icpt < 0:
        return None
    return float(icpt), float(slope)


def padding(audio: np.ndarray, rate: int) -> tuple[float, float, float]:
    """Seconds of (leading near-silence, speech, trailing near-silence) in `audio`."""
    loud = np.flatnonzero(np.abs(np.asarray(audio)) > SILENCE_LEVEL)
    if not loud.size:
        return 0.0, 0.0, len(audio) / rate
    first, last = int(loud[0]), int(loud[-1])
    return first / rate, (last + 1 - first) / rate, (len(audio) - 1 - last) / rate


def fit(points: list[tuple[float, float, np.ndarray]], rate: int) -> UnitCost:
    """A UnitCost from (chars, model seconds, audio) of calls of different lengths (least squares;
    the fixed part and the slope are never negative)."""
    chars = np.array([p[0] for p in points], dtype=np.float64)
    secs = np.array([p[1] for p in points], dtype=np.float64)
    if len(points) >= 2 and np.ptp(chars) > 0:
        slope, icpt = np.polyfit(chars, secs, 1)
    else:
        slope, icpt = float(secs.sum() / chars.sum()), 0.0
    if icpt < 0:
        slope, icpt = float(secs.sum() / chars.sum()), 0.0
    if slope <= 0:
        slope, icpt = 1e-4, float(secs.mean())
    pads = [padding(p[2], rate) for p in points]
    speech = sum(s for _, s, _ in pads)
    cost = UnitCost(call_s=float(icpt), char_s=float(slope), observations=len(points))
    cost.recent.extend((float(c), float(t)) for c, t, _ in points)  # the first refits include them
    if speech > 0:
        cost.speech_s_per_char = speech / float(chars.sum())
        cost.lead_pad_s = float(np.mean([lead for lead, _, _ in pads]))
        cost.tail_pad_s = float(np.mean([tail for _, _, tail in pads]))
    return cost


def calibrate(synth: Synthesizer, voice: str, clock: Callable[[], float] = time.perf_counter) -> UnitCost:
    """Time one call per :data:`CALIBRATION_TEXTS` (after the warm-up) and fit a UnitCost."""
    points = []
    for text in CALIBRATION_TEXTS:
        started = clock()
        audio = np.concatenate([np.asarray(c, dtype=np.float32) for c in synth.synthesize(text, voice, 1.0)]
                               or [np.zeros(0, np.float32)])
        points.append((float(len(text)), clock() - started, audio))
    return fit(points, synth.sample_rate)
