"""The load of one capacity step: n LLM-paced conversations against one container for a number of seconds.

Each session speaks conversation turns (``loadtest.turn``, the chunker releasing each sentence as the
simulated LLM streams it); the next turn starts when the listener would have heard the previous one to
the end, plus a pause. The step's clock is ``time.perf_counter``, the clock the turns' own times are
on: a session's turns, its stop time and its listening all compare against one another.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from bidi_tts.session import ClientSession
from bidi_tts.transports.base import TransportError
from bidi_tts.transports.websocket_sync import SyncWebSocketTransport
from bidi_tts_loadtest.capacity_step import StepResult, TurnSample, sched_delta, turn_sample
from bidi_tts_loadtest.corpus import load_answers
from bidi_tts_loadtest.turn import ClosableSyncTransport, TurnConfig, TurnResult, run_turn

#: Called after each turn with what it measured (the ladder keeps each turn's start and text).
OnTurn = Callable[[TurnResult, TurnSample, str], None]


def session_loop(url: str | Callable[[], ClosableSyncTransport], stop_at: float, out: list[TurnSample],
                  config: TurnConfig, index: int, pause_s: float, first_turn_at: float = 0.0, *,
                  max_turns: int | None = None, on_turn: OnTurn | None = None) -> None:
    """One LLM-paced conversation until `stop_at` (or `max_turns`); `url` a container URL or a transport opener."""
    answers = load_answers()
    n = index * 7  # sessions start at different answers
    try:
        transport = SyncWebSocketTransport.open(url) if isinstance(url, str) else url()
    except TransportError:
        out.append(TurnSample(None, 0, 0.0, 1))
        return
    session = ClientSession()
    turns = 0
    try:
        time.sleep(max(0.0, first_turn_at - time.perf_counter()))
        while time.perf_counter() < stop_at and (max_turns is None or turns < max_turns):
            answer = answers[n % len(answers)]
            result = run_turn(transport, session, answer, config)
            n += 1
            turns += 1
            sample = turn_sample(result)
            out.append(sample)
            if on_turn is not None:
                on_turn(result, sample, answer)
            if result.failure:
                return
            # The listener hears the turn out, then answers: the next turn starts after that.
            first = result.first_audio_at
            heard_at = first + sample.audio_s if first else time.perf_counter()
            time.sleep(max(0.0, heard_at - time.perf_counter()) + pause_s)
    finally:
        transport.close()


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
