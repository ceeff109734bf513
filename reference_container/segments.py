"""Plan the synthesis units of one message: sentences, cut at a clause only as much as needed.

Kokoro's latency grows with the length of what it is given, so the first audio of a message waits
for its whole first unit, and each later unit must be ready before the audio already sent runs out.
Sentences come from :mod:`bidi_tts.chunker`. Without a :class:`Pace` the plan is the simple one: a
long first sentence is cut once at its first clause (:func:`bidi_tts.chunker.first_clause_split`,
the one place that rule lives) and later sentences stay whole.

With a :class:`Pace` (the container's measured real-time factor and the session's unplayed audio)
the plan follows the listener's buffer: a short first unit for a fast start when the listener has
nothing left to hear, then each unit as long as the audio queued before it allows. A sentence whose
synthesis would outlast that lead is cut at a clause or phrase boundary, the head no longer than
the lead can cover (but at least ``MIN_UNIT_CHARS``); a sentence that fits stays whole (prosody
matters more than a cut that is not needed). As units are planned the lead grows by their audio
and shrinks by their synthesis time, so units grow as the lead grows. A container slower than
real time for this session (``rtf >= 1``, e.g. two sessions sharing one worker) cannot keep any
listener fed by cutting: its plan is then the simple one, so overload costs no extra model calls.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from bidi_tts.chunker import first_clause_split, split_sentences

#: The shortest unit a paced plan cuts (a shorter one costs a model call for little audio).
MIN_UNIT_CHARS = 20

__all__ = ["MIN_UNIT_CHARS", "Pace", "PlannedUnit", "first_clause_split", "plan_segments", "plan_units"]


@dataclass(frozen=True, slots=True)
class Pace:
    """What the plan knows of the container's speed and of the listener.

    `rtf`: synthesis seconds per second of audio for this session's units (the scheduler's learned
    value, times the sessions sharing a worker); `audio_s_per_char`: the speaking rate; `lead_s`:
    audio the session's listener has received but not heard when the message starts; `margin_s`:
    kept in hand for network and scheduling jitter.
    """

    rtf: float
    audio_s_per_char: float
    lead_s: float = 0.0
    margin_s: float = 0.3

    def chars_within(self, seconds: float) -> int:
        """The longest text whose synthesis fits in `seconds`."""
        per_char = max(self.rtf, 1e-3) * max(self.audio_s_per_char, 1e-3)
        return max(0, int(seconds / per_char))


@dataclass(frozen=True, slots=True)
class PlannedUnit:
    """One model call: its text, and whether it continues the previous unit's sentence."""

    text: str
    joined: bool = False


def plan_units(text: str, first_clause_chars: int, pace: Pace | None = None) -> list[PlannedUnit]:
    """The units of one message, in order; their texts together say all of `text`."""
    sentences = deque(s for s in (split_sentences(text) or [text]) if s.strip())
    units: list[PlannedUnit] = []
    lead = pace.lead_s if pace is not None else 0.0
    joined = False
    while sentences:
        sentence = sentences.popleft()
        limit = _limit(units, lead, first_clause_chars, pace)
        split = first_clause_split(sentence, limit) if limit > 0 else None
        head = sentence
        if split is not None:
            head, rest = split
            sentences.appendleft(rest)
        units.append(PlannedUnit(head, joined))
        joined = split is not None
        if pace is not None:
            audio = len(head) * pace.audio_s_per_char
            synth = pace.rtf * audio
            # The listener hears this unit after what it already holds; while it is synthesized, the
            # lead drains (a listener with nothing left waits: the lead cannot go below zero).
            lead = max(0.0, lead - synth) + audio
    return units


def _limit(units: list[PlannedUnit], lead: float, first_clause_chars: int, pace: Pace | None) -> int:
    """The longest next unit (0: no limit)."""
    if pace is None or first_clause_chars <= 0:  # unpaced, or cutting turned off ("0: never")
        return first_clause_chars if not units else 0
    if lead <= pace.margin_s:
        return first_clause_chars  # nothing to play meanwhile: a short unit for a fast start
    if pace.rtf >= 1.0:  # slower than real time: no cut keeps the listener fed; the simple plan
        return first_clause_chars if not units else 0
    return max(pace.chars_within(lead - pace.margin_s), MIN_UNIT_CHARS)


def plan_segments(text: str, first_clause_chars: int, pace: Pace | None = None) -> list[str]:
    """The texts to synthesize for one message, in order; their concatenation speaks all of `text`."""
    return [unit.text for unit in plan_units(text, first_clause_chars, pace)]
