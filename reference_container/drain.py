"""What a stopping container lets finish: the open sessions and POST streams (reference_container.shutdown
says when and why)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from reference_container.logs import kv

log = logging.getLogger(__name__)

STOP_GRACE_S = 3.0  # after the drain deadline: for stopped work to say so and its session to close
GOING_AWAY_REASON = "the container is shutting down"


class Drainable(Protocol):
    """A session or a POST stream that a stopping container lets finish."""

    def drain(self) -> None:
        """Finish the work in progress, start nothing new, then end."""

    def stop_now(self) -> None:
        """Stop the work in progress at once, then end."""


@dataclass(eq=False)
class Drain:
    """What is open (sessions, POST streams), and whether the container is stopping."""

    open: set[Drainable] = field(default_factory=set)
    draining: bool = False
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _give_up: Callable[[], bool] = lambda: False

    def register(self, item: Drainable) -> None:
        self.open.add(item)
        if self.draining:  # opened while stopping (a handshake already under way): ends at once
            item.drain()

    def unregister(self, item: Drainable) -> None:
        self.open.discard(item)
        self._changed.set()

    async def run(self, deadline_s: float, stop_grace_s: float = STOP_GRACE_S,
                  give_up: Callable[[], bool] = lambda: False) -> int:
        """Drain everything open; stop what is left at the deadline (or as soon as `give_up()`).
        Returns how many were stopped."""
        self._give_up = give_up
        started = time.perf_counter()
        self.draining = True
        count = len(self.open)
        for item in list(self.open):
            item.drain()
        stopped = 0
        if not await self._emptied(deadline_s):
            stopped = len(self.open)
            for item in list(self.open):
                item.stop_now()
            await self._emptied(stop_grace_s)
        log.info(kv(event="drained", open=count, stopped=stopped, left=len(self.open),
                    drain_s=time.perf_counter() - started))
        return stopped

    async def _emptied(self, within_s: float) -> bool:
        deadline = time.perf_counter() + within_s
        while self.open:
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or self._give_up():
                return False
            self._changed.clear()
            try:  # woken by each end; a second signal is seen within 0.2 s
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.2))
            except TimeoutError:
                pass
        return True
