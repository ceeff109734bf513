"""The session loop the capacity sweep and the ladders share: one LLM-paced conversation over one transport.

Each turn is :func:`.turn.run_turn` (the chunker releasing each sentence as the simulated LLM streams it);
the next turn starts when the listener would have heard the previous one to the end, plus a pause. The
clock is ``time.perf_counter``, the clock the turns' own times are on. A turn is measured as a
:class:`TurnSample`: TTFA, the underruns of a player that plays the whole turn from its first frame (a
stall over 50 ms counts), its audio, its errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bidi_tts.metrics import playback_time, playback_underruns
from bidi_tts.protocol import DEFAULT_SAMPLE_RATE
from bidi_tts.session import ClientSession
from bidi_tts.transports.base import TransportError
from bidi_tts.transports.websocket_sync import SyncWebSocketTransport
from bidi_tts_loadtest.core.corpus import load_answers
from bidi_tts_loadtest.core.turn import ClosableSyncTransport, TurnConfig, TurnResult, run_turn

UNDERRUN_TOLERANCE_S = 0.05
BYTES_PER_S = 2 * DEFAULT_SAMPLE_RATE


@dataclass(slots=True)
class TurnSample:
    ttfa_s: float | None
    underruns: int
    audio_s: float
    errors: int
    ttfa_audible_s: float | None = None  # to the first sample at -40 dBFS, as a player hears it
    message_ttfa_s: list[float] = field(default_factory=list)  # each message's, from its own send


def turn_sample(result: TurnResult) -> TurnSample:
    """TTFA, whole-turn underruns and audio of one turn."""
    times = [t for r in result.records for t in r.frame_times]
    sizes = [n / BYTES_PER_S for r in result.records for n in r.frame_sizes]
    runs = playback_underruns(times, sizes, tolerance_s=UNDERRUN_TOLERANCE_S)
    return TurnSample(result.turn_ttfa_s, runs.count, sum(sizes), result.errors, turn_audible_s(result),
                      [r.ttfa_s for r in result.records if r.ttfa_s is not None])


def turn_audible_s(result: TurnResult) -> float | None:
    """From the turn's start to its first audible sample, played by one player for the whole turn."""
    before = 0
    for record in result.records:
        if record.first_audible_byte is not None:
            times = [t for r in result.records for t in r.frame_times]
            sizes = [n for r in result.records for n in r.frame_sizes]
            at = playback_time(times, sizes, before + record.first_audible_byte, BYTES_PER_S,
                               tolerance_s=UNDERRUN_TOLERANCE_S)
            return None if at is None else at - result.started_at
        before += sum(record.frame_sizes)
    return None


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
