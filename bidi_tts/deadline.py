"""A deadline on the monotonic clock, for the loops that wait for something with a bound.

``time.monotonic`` throughout: a wait's bound is wall time that no clock adjustment can stretch or
cut, and one clock for every deadline means two of them can be compared. (Latency *measurements* use
``time.perf_counter``; they are not deadlines.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["Deadline"]


@dataclass(frozen=True, slots=True)
class Deadline:
    """``seconds`` from when it was made; ``None`` seconds never expires."""

    seconds: float | None
    started: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        """Seconds since the deadline was made."""
        return time.monotonic() - self.started

    def remaining(self) -> float:
        """Seconds left, never below 0 (``inf`` for a deadline that never expires)."""
        if self.seconds is None:
            return float("inf")
        return max(0.0, self.seconds - self.elapsed())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0
