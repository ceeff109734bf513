"""The synthesizer seam: text, voice, speed in; float32 PCM chunks at `sample_rate` out.

`synthesize` is blocking and is run in a worker thread by :mod:`reference_container.scheduler`;
it yields one chunk per model call (a phoneme chunk of at most 510 symbols), so a cancelled job
stops between chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import numpy as np

WARMUP_TEXT = "Hello there, this is a warm-up."


@runtime_checkable
class Synthesizer(Protocol):
    """What the container needs from a text-to-speech model."""

    sample_rate: int

    @property
    def name(self) -> str:
        """Backend name for logs (`onnx`, `torch`)."""
        ...

    @property
    def voices(self) -> frozenset[str]:
        """Voice names this synthesizer accepts (the allow-list)."""
        ...

    def load(self) -> None:
        """Load weights and voices (blocking; called once, off the event loop)."""
        ...

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        """Speak `text`; yield mono float32 chunks in [-1, 1] as each model call finishes."""
        ...


def warm_up(synth: Synthesizer, voice: str) -> float:
    """Run one real synthesis so the first request pays no lazy-initialisation cost; seconds of audio."""
    samples = sum(len(chunk) for chunk in synth.synthesize(WARMUP_TEXT, voice, 1.0))
    if samples == 0:
        raise RuntimeError("warm-up synthesis produced no audio")
    return samples / synth.sample_rate
