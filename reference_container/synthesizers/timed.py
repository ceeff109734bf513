"""A synthesizer that takes the time a profile predicts and returns audio of the predicted length.

``--backend timed --timed-profile NAME|PATH``: simulation, for capacity planning without the device.
It sits behind the same seam as the real backends, so every unit goes through the same scheduler,
workers, deadlines and (with ``--batch-window-ms``) the same serving loop
(:class:`~.model_loop.ModelLoop`) as on the real model; only the model pass is replaced by a wait of
the profile's predicted length (:mod:`.timed_profile`).

- Tokens: estimated from characters (``tokens_per_char``, calibrated against misaki); the real G2P
  is not imported, so the backend starts in a second with no model files. Its cost is the profile's
  ``g2p_*`` wait.
- Concurrency: :class:`SharedDevice` is processor sharing with the profile's throughput curve: with
  k calls running, each advances at throughput(k)/k of its solo speed, re-evaluated whenever a call
  starts or ends.
- Batches: one pass costs the profile's ``batch_s`` (whole-model batches padded to the longest
  unit for ``h200-batched``; ``s call(n_max) + (1 - s) sum call(n_i)`` for the older profiles).
- G2P: a wait on the worker's thread (it holds the worker, as KPipeline's G2P does in the real
  workers); with ``g2p_on_device`` it is device work too, sharing the device with the calls. With
  `g2p_processes` > 0 it waits for one of that many G2P processes (the torch route's
  ``--g2p-processes``), so at most that many G2P runs overlap.
- Spread: with ``call_cv`` each call's cost is scaled by a log-normal draw of mean 1 (a seeded
  generator: runs repeat).
- Audio: a quiet 200 Hz tone (-20 dBFS, so a listener measuring audible samples hears it) of the
  predicted duration, one chunk per model call, as the real backends yield. With ``unit_onset_s``
  each unit starts with that much silence, as Kokoro's do: the container's onset trim
  (:func:`reference_container.onset.trim_onset`) takes it off a message's first unit, keeping
  ``KEEP_S`` before the first audible sample, so a first unit comes out at the profile's length
  (the tone is ``KEEP_S`` shorter) and every later unit ``unit_onset_s`` longer, like the real one.
"""

from __future__ import annotations

import functools
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from reference_container.onset import KEEP_S
from reference_container.synthesizers.model_loop import ModelLoop, thread_deadline
from reference_container.synthesizers.timed_profile import Profile

log = logging.getLogger(__name__)

# Kokoro-82M's English voices: the timed backend accepts the real model's names, needing no files.
KOKORO_ENGLISH_VOICES = frozenset(
    "af_alloy af_aoede af_bella af_heart af_jessica af_kore af_nicole af_nova af_river af_sarah af_sky "
    "am_adam am_echo am_eric am_fenrir am_liam am_michael am_onyx am_puck am_santa bf_alice bf_emma "
    "bf_isabella bf_lily bm_daniel bm_fable bm_george bm_lewis".split()
)
TONE_HZ = 200.0  # a whole number of periods per second at 24 kHz, so one second of it tiles
TONE_AMPLITUDE = 0.1  # -20 dBFS


class SharedDevice:
    """Processor sharing: :meth:`run` blocks for `work_s` of solo work, slowed while others run too."""

    def __init__(self, throughput: Callable[[int], float], clock: Callable[[], float] = time.perf_counter) -> None:
        self._throughput = throughput
        self._clock = clock
        self._cond = threading.Condition()
        self.active = 0
        self.busy_s = 0.0  # wall time with at least one call running

    def _rate(self, k: int) -> float:
        return self._throughput(k) / k

    def run(self, work_s: float) -> None:
        if work_s <= 0:
            return
        with self._cond:
            self.active += 1
            self._cond.notify_all()  # the others slow down from now
            remaining = work_s
            last = self._clock()
            try:
                while True:
                    rate = self._rate(self.active)
                    if remaining <= 1e-6:
                        break
                    self._cond.wait(remaining / rate)
                    now = self._clock()
                    remaining -= (now - last) * rate
                    last = now
            finally:
                self.active -= 1
                self._cond.notify_all()


@functools.cache
def _second_of_tone(sample_rate: int) -> np.ndarray:
    t = np.arange(sample_rate, dtype=np.float64) / sample_rate
    return (TONE_AMPLITUDE * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32)


def tone(seconds: float, sample_rate: int) -> np.ndarray:
    """`seconds` of the tone, tiled from one cached second (a copy, no sine per sample: cheap)."""
    return np.resize(_second_of_tone(sample_rate), max(1, round(seconds * sample_rate)))


def unit_audio(seconds: float, onset_s: float, sample_rate: int) -> np.ndarray:
    """A unit's first call: `onset_s` of leading silence, then the tone, laid out so that after the
    container's first-unit trim (which keeps ``KEEP_S`` of the silence) it lasts `seconds`."""
    if onset_s <= 0:
        return tone(seconds, sample_rate)
    keep = min(KEEP_S, seconds)
    silence = np.zeros(round((onset_s + keep) * sample_rate), dtype=np.float32)
    return np.concatenate([silence, tone(seconds - keep, sample_rate)])


class TimedSynthesizer:
    """Synthesizer seam implemented by waiting: see the module docstring."""

    name = "timed"
    sample_rate = 24_000

    def __init__(self, profile: Profile, *, workers: int = 1, batch_window_ms: float = 0.0, batch_max: int = 0,
                 batch_tokens: int = 0, g2p_processes: int = 0, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep, seed: int = 0) -> None:
        self.profile = profile
        self.device = SharedDevice(profile.throughput, clock)
        self._sleep = sleep
        self._workers = max(1, workers)
        self.batch_window_ms = batch_window_ms
        self.batch_max = batch_max or self._workers
        self.batch_tokens = batch_tokens
        self.loop: ModelLoop[int] | None = None
        self._g2p_slots = threading.BoundedSemaphore(g2p_processes) if g2p_processes > 0 else None
        self.calls = 0
        self._rng = random.Random(seed)
        sigma = math.sqrt(math.log1p(profile.call_cv**2))
        self._spread = (-sigma * sigma / 2, sigma)  # log-normal (mu, sigma) of mean 1

    def spread(self, cost_s: float) -> float:
        """`cost_s` scaled by a draw of the profile's spread (unchanged when ``call_cv`` is 0)."""
        mu, sigma = self._spread
        return cost_s * self._rng.lognormvariate(mu, sigma) if sigma > 0 else cost_s

    @property
    def voices(self) -> frozenset[str]:
        return KOKORO_ENGLISH_VOICES

    def load(self) -> None:
        if self.batch_window_ms > 0:
            self.loop = ModelLoop(self._forward, batch_max=self.batch_max, window_s=self.batch_window_ms / 1000,
                                  token_budget=self.batch_tokens or None)
        log.info("event=model_loaded backend=timed profile=%s source=%r batch_window_ms=%s "
                 "message=\"simulation: synthesis times and audio lengths come from the profile\"",
                 self.profile.name, self.profile.source[:80], self.batch_window_ms)

    def _forward(self, tokens: list[int]) -> list[Any]:
        """One batched pass (the serving loop's thread) over units of these token counts."""
        self.device.run(self.spread(self.profile.batch_s(tokens)))
        return [None] * len(tokens)

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        profile = self.profile
        g2p_s = profile.g2p_s(text)
        if profile.g2p_on_device:
            self.device.run(g2p_s)
        elif self._g2p_slots is not None:
            with self._g2p_slots:
                self._sleep(g2p_s)
        else:
            self._sleep(g2p_s)
        for i, tokens in enumerate(profile.split_tokens(profile.tokens(text))):
            if self.loop is not None:
                self.loop(tokens, tokens, thread_deadline())
            else:
                self.device.run(self.spread(profile.call_s(tokens)))
            self.calls += 1
            seconds = profile.audio_s(tokens, speed)
            yield unit_audio(seconds, profile.unit_onset_s / max(speed, 1e-3), self.sample_rate) if i == 0 \
                else tone(seconds, self.sample_rate)
