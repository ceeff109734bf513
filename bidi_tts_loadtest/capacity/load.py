"""The load of one capacity step: n LLM-paced conversations against one container for a number of seconds.

Each session is :func:`bidi_tts_loadtest.core.session_loop.session_loop` in a thread (the loop the
ladders' session load runs too). The step's clock is ``time.perf_counter``, the clock the turns' own
times are on: a session's turns, its stop time and its listening all compare against one another.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from bidi_tts_loadtest.capacity.step import StepResult, sched_delta
from bidi_tts_loadtest.core.session_loop import TurnSample, session_loop
from bidi_tts_loadtest.core.turn import TurnConfig


def measure_step(url: str, config_name: str, sessions: int, seconds: float, *,
                 tokens_per_second: float = 40.0, pause_s: float = 1.0,
                 read_sched: Callable[[], dict[str, float]] | None = None, basis: str = "turn",
                 arrival_s: float = 0.0) -> StepResult:
    """`sessions` concurrent conversations for `seconds` (turns under way are finished).

    `arrival_s` spreads the sessions' first turns evenly over that many seconds (users do not all
    start talking in the same instant; with 0 they do, and a short step measures that burst)."""
    turn_config = TurnConfig(tokens_per_second=tokens_per_second, message_timeout_s=60.0)
    sched_before = read_sched() if read_sched else {}
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    samples: list[TurnSample] = []
    threads = [threading.Thread(target=session_loop, daemon=True,
                                args=(url, started + seconds, samples, turn_config, i, pause_s,
                                      started + arrival_s * i / sessions))
               for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 180)
    wall = time.perf_counter() - started
    sched = sched_delta(sched_before, read_sched()) if read_sched else {}
    return StepResult(config_name, sessions, wall, list(samples), load_before, os.getloadavg()[0],
                      sched, pause_s, basis)
