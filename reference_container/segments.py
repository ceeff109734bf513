"""Plan the synthesis units of one message: sentences, cut at a phrase only as much as needed.

Kokoro's latency grows with the length of what it is given, so the first audio of a message waits
for its whole first unit, and each later unit must be ready before the audio already sent runs out.
Sentences come from :mod:`bidi_tts.chunker`. Without a :class:`Pace` the plan is the simple one: a
long first sentence is cut once at its first clause (:func:`bidi_tts.chunker.first_clause_split`,
the one place that rule lives) and later sentences stay whole.

With a :class:`Pace` (what a unit costs on this machine, :mod:`reference_container.unit_cost`, and
the audio the session's listener still holds) the plan is a simulation of the listener, unit by
unit: a unit is synthesized while the listener plays what it holds, and must be ready, with a
margin, before that runs out. Each later unit is the whole next sentence when it fits (prosody
matters more than a cut that is not needed), else the sentence's longest head ending at a clause
mark or before a conjunction or preposition within what the lead covers (at least
``MIN_UNIT_CHARS``).
As units are planned the lead grows by their audio and shrinks by their synthesis time, so units
grow as the lead grows.

When the listener has nothing left to hear (a new message), it waits for the first unit: the plan
weighs each first unit the first sentence allows (the whole sentence, its best cut within
`first_clause_chars`, and every shorter head ending at a clause mark or before a conjunction,
"Sure," included) by the wait it costs plus ``STALL_WEIGHT`` times the silence the rest of its plan
is predicted to leave mid-message, plus ``CUT_COST_S`` a cut, and takes the cheapest: the shortest
start that the rest can follow without running dry. A container slower than real time for this
session (e.g. two sessions sharing one worker on a CPU) cannot keep a listener fed by cutting: its
plan is then the simple one, so overload costs no extra model calls.

The audio the plan counts for a unit is what the listener gets: the model's padding is cut where
:mod:`reference_container.streaming` cuts it (a message's first unit starts ``onset.KEEP_S``
before its first audible sample; at a cut inside a sentence ``JOIN_LEAD_S`` and
:func:`join_tail_s` of the pause are kept).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from bidi_tts.chunker import first_clause_split, phrase_splits, split_sentences
from reference_container.onset import KEEP_S

#: The shortest unit a paced plan cuts after the first (a shorter one costs a model call for little audio).
MIN_UNIT_CHARS = 20
#: The shortest first unit that ends at a clause mark ("Sure," "Well,").
SHORT_CLAUSE_HEAD = 4
#: A second of predicted silence mid-message weighs as much as this many seconds of waiting at the start.
STALL_WEIGHT = 10.0
#: What one more cut costs, in seconds of start-up wait (a small prosody price: ties go to fewer cuts).
CUT_COST_S = 0.05
#: Where a sentence is cut between two units, the pause kept from the head's tail and the rest's lead;
#: a head that ends at a clause mark ("Sure,") keeps the pause a speaker makes there.
JOIN_TAIL_S = 0.10
JOIN_CLAUSE_TAIL_S = 0.20
JOIN_LEAD_S = 0.03
_CLAUSE_MARKS = frozenset(",;:—–-")

__all__ = [
    "CUT_COST_S", "JOIN_CLAUSE_TAIL_S", "JOIN_LEAD_S", "JOIN_TAIL_S", "MIN_UNIT_CHARS", "SHORT_CLAUSE_HEAD",
    "STALL_WEIGHT", "Pace", "PlannedUnit", "first_clause_split", "join_tail_s", "plan_segments", "plan_units",
]


def join_tail_s(head: str) -> float:
    """The pause kept after a unit whose sentence goes on in the next unit."""
    return JOIN_CLAUSE_TAIL_S if head.rstrip()[-1:] in _CLAUSE_MARKS else JOIN_TAIL_S


@dataclass(frozen=True, slots=True)
class Pace:
    """What the plan knows of the container's speed and of the listener.

    A unit of n characters takes ``call_s + char_s * n`` to synthesize (this session's share of the
    worker included) and speaks ``speech_s_per_char * n`` plus the model's padding (`lead_pad_s`
    before, `tail_pad_s` after). `lead_s`: audio the session's listener has received but not heard
    when the message starts. A unit must be ready ``margin_s`` before the listener runs dry, its
    synthesis time taken `slack` (a fraction) longer than predicted.
    """

    call_s: float
    char_s: float
    speech_s_per_char: float
    lead_s: float = 0.0
    margin_s: float = 0.15
    slack: float = 0.2
    lead_pad_s: float = 0.3
    tail_pad_s: float = 0.45

    @property
    def waiting(self) -> bool:
        """The listener has (about) nothing left to hear: it waits for this message's first unit."""
        return self.lead_s <= self.margin_s

    @property
    def slower_than_real_time(self) -> bool:
        return self.char_s >= self.speech_s_per_char

    def synth_s(self, text: str) -> float:
        return self.call_s + self.char_s * len(text)

    def need_s(self, text: str) -> float:
        """The lead a unit needs to be ready in time: its synthesis, with slack, and the margin."""
        return self.synth_s(text) * (1.0 + self.slack) + self.margin_s

    def chars_within(self, lead: float) -> int:
        """The longest unit that a listener holding `lead` seconds can wait for."""
        seconds = (lead - self.margin_s) / (1.0 + self.slack) - self.call_s
        return max(0, int(seconds / max(self.char_s, 1e-6)))

    def audio_s(self, text: str, *, first: bool, joined_before: bool, joined_after: bool) -> float:
        """What the listener gets of a unit, after the container's cuts of the padding."""
        before = KEEP_S if first else JOIN_LEAD_S if joined_before else self.lead_pad_s
        after = min(join_tail_s(text), self.tail_pad_s) if joined_after else self.tail_pad_s
        return before + self.speech_s_per_char * len(text) + after


@dataclass(frozen=True, slots=True)
class PlannedUnit:
    """One model call: its text, and whether it continues the previous unit's sentence."""

    text: str
    joined: bool = False


@dataclass(slots=True)
class _Plan:
    """A plan under construction and what the simulated listener went through."""

    lead: float
    units: list[PlannedUnit] = field(default_factory=list)
    wait_s: float = 0.0  # the first unit's synthesis, when the listener waits for it
    shortfall_s: float = 0.0  # predicted silence mid-message (margin included)
    cuts: int = 0
    _continues: bool = False  # the last unit planned is a head whose sentence goes on

    def score(self) -> float:
        return self.wait_s + STALL_WEIGHT * self.shortfall_s + CUT_COST_S * self.cuts

    def add(self, head: str, rest: str | None, pace: Pace) -> None:
        """Plan `head` next (`rest`: the part of its sentence left for the next unit)."""
        first = not self.units
        joined = bool(self.units) and self._continues
        synth = pace.synth_s(head)
        if first and pace.waiting:
            self.wait_s = synth
        else:
            self.shortfall_s += max(0.0, pace.need_s(head) - self.lead)
        audio = pace.audio_s(head, first=first, joined_before=joined, joined_after=rest is not None)
        # The listener hears this unit after what it holds; while it is made, the lead drains (a
        # listener with nothing left waits: the lead cannot go below zero).
        self.lead = max(0.0, self.lead - synth) + audio
        self.units.append(PlannedUnit(head, joined))
        self.cuts += rest is not None
        self._continues = rest is not None


def _extend(plan: _Plan, sentences: deque[str], pace: Pace) -> _Plan:
    """Plan the remaining sentences greedily: each whole when it fits in the lead, else its longest
    head at a phrase boundary that fits (a bare word boundary only where there is none)."""
    while sentences:
        sentence = sentences.popleft()
        rest = None
        limit = pace.chars_within(plan.lead)
        if len(sentence) > limit:
            limit = max(limit, MIN_UNIT_CHARS)
            phrases = phrase_splits(sentence, limit)
            split = phrases[-1] if phrases else first_clause_split(sentence, limit)
            if split is not None:
                sentence, rest = split
                sentences.appendleft(rest)
        plan.add(sentence, rest, pace)
    return plan


def _first_units(sentence: str, first_clause_chars: int) -> list[tuple[str, str | None]]:
    """The first units worth weighing: every phrase cut within `first_clause_chars` (short clause
    heads included), the simple plan's cut, and the whole sentence when it is short enough or
    cannot be cut."""
    out: list[tuple[str, str | None]] = list(
        phrase_splits(sentence, first_clause_chars, min_clause_head=SHORT_CLAUSE_HEAD))
    simple = first_clause_split(sentence, first_clause_chars)
    if simple is not None and simple not in out:
        out.append(simple)
    if len(sentence) <= first_clause_chars or not out:
        out.append((sentence, None))
    return out


def plan_units(text: str, first_clause_chars: int, pace: Pace | None = None) -> list[PlannedUnit]:
    """The units of one message, in order; their texts together say all of `text`."""
    sentences = [s for s in (split_sentences(text) or [text]) if s.strip()]
    if not sentences:
        return []
    if pace is None or first_clause_chars <= 0 or pace.slower_than_real_time:
        return _simple(sentences, first_clause_chars)
    if not pace.waiting:
        return _extend(_Plan(pace.lead_s), deque(sentences), pace).units
    plans = []
    for head, rest in _first_units(sentences[0], first_clause_chars):
        plan = _Plan(pace.lead_s)
        plan.add(head, rest, pace)
        plans.append(_extend(plan, deque(([rest] if rest else []) + sentences[1:]), pace))
    return min(plans, key=lambda p: (p.score(), -len(p.units[0].text))).units


def _simple(sentences: list[str], first_clause_chars: int) -> list[PlannedUnit]:
    """A long first sentence cut once at its first clause; the rest whole ("0": never cut)."""
    split = first_clause_split(sentences[0], first_clause_chars) if first_clause_chars > 0 else None
    if split is None:
        return [PlannedUnit(s) for s in sentences]
    head, rest = split
    return [PlannedUnit(head), PlannedUnit(rest, joined=True), *(PlannedUnit(s) for s in sentences[1:])]


def plan_segments(text: str, first_clause_chars: int, pace: Pace | None = None) -> list[str]:
    """The texts to synthesize for one message, in order; their concatenation speaks all of `text`."""
    return [unit.text for unit in plan_units(text, first_clause_chars, pace)]
