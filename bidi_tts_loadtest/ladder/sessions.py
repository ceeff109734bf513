"""Session load: LLM-paced bidirectional sessions, what the capacity sweep's *held* measures.

Each job is one session of the core's loop (:func:`bidi_tts_loadtest.core.session_loop.session_loop`:
the chunker releasing each sentence as the simulated LLM streams it, the listener hearing each turn out
and pausing before the next) over the load tool's transports
(:func:`bidi_tts_loadtest.core.target.open_sync_transport`: a container's WebSocket, or a SageMaker
endpoint's bidirectional stream, the local stand-in included). Its span is the session, open to
close; its samples are its turns: TTFA from the LLM's first token to the turn's first audio, the
underruns of a player that plays the whole turn from its first frame. A level holds when p95 TTFA
meets the SLO and no measured turn underran (:func:`.rung.rung` with ``load="session"``).

closed loop: N sessions open for the whole hold, turn after turn. open loop: sessions arrive at the
rate, each speaking ``--session-turns`` turns (none starts after the hold) and closing.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable

from bidi_tts_loadtest.core.session_loop import TurnSample, session_loop
from bidi_tts_loadtest.core.target import open_sync_transport
from bidi_tts_loadtest.core.turn import ClosableSyncTransport, TurnConfig, TurnResult
from bidi_tts_loadtest.ladder.loops import JobFactory
from bidi_tts_loadtest.ladder.rung import Collected, Sample

_indexes = itertools.count()


class SessionJob:
    """One client's sessions, one per call."""

    def __init__(self, opener: Callable[[], ClosableSyncTransport], config: TurnConfig, pause_s: float,
                 max_turns: int | None) -> None:
        self.opener, self.config, self.pause_s, self.max_turns = opener, config, pause_s, max_turns
        self.index = next(_indexes)

    def __call__(self, item: str, span: Sample, collected: Collected) -> None:
        span.sent_at = time.perf_counter()
        turns: list[TurnSample] = []
        spoken = 0

        def on_turn(result: TurnResult, sample: TurnSample, answer: str) -> None:
            nonlocal spoken
            spoken += 1
            done = [r.completed_at for r in result.records if r.completed_at is not None]
            failed = result.failure or ("error frame" if sample.errors else None)
            collected.samples.append(Sample(
                sent_at=result.started_at, first_at=result.first_audio_at,
                done_at=max(done) if done and not failed else time.perf_counter(), error=failed,
                chars=len(answer), audio_s=sample.audio_s, underruns=sample.underruns))

        session_loop(self.opener, collected.stop_at, turns, self.config, self.index, self.pause_s,
                      max_turns=self.max_turns, on_turn=on_turn)
        if turns and not spoken:  # the session did not open
            collected.samples.append(Sample(sent_at=span.sent_at, done_at=time.perf_counter(), error="connect"))
        span.done_at = time.perf_counter()

    def close(self) -> None:
        pass


def session_jobs(args: argparse.Namespace, url: str | None) -> JobFactory:
    """Jobs for ``--load session``: `url` a container (None: ``args`` names a SageMaker endpoint)."""
    config = TurnConfig(tokens_per_second=args.tokens_per_second, message_timeout_s=args.timeout_s)
    max_turns = args.session_turns if args.loop == "open" else None

    def opener() -> ClosableSyncTransport:
        return open_sync_transport(args, url)

    return lambda: SessionJob(opener, config, args.pause_s, max_turns)
