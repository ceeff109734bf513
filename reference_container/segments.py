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

from dataclasses import dataclass

from bidi_tts.chunker import first_clause_split, phrase_cut_offsets, split_sentences
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
#: A unit is planned to be ready this long before the listener runs dry (at least) ...
MARGIN_S = 0.15
#: ... its model time taken this fraction longer than predicted (at least).
SLACK = 0.2
_CLAUSE_MARKS = frozenset(",;:—–-")

__all__ = [
    "CUT_COST_S", "JOIN_CLAUSE_TAIL_S", "JOIN_LEAD_S", "JOIN_TAIL_S", "MARGIN_S", "MIN_UNIT_CHARS",
    "SHORT_CLAUSE_HEAD", "SLACK", "STALL_WEIGHT", "Pace", "PlannedUnit", "first_clause_split", "join_tail_s",
    "plan_segments", "plan_units",
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
    synthesis time taken `slack` (a fraction) longer than predicted (the container widens both to
    its measured scatter: :func:`reference_container.streaming.pace_for`).
    """

    call_s: float
    char_s: float
    speech_s_per_char: float
    lead_s: float = 0.0
    margin_s: float = MARGIN_S
    slack: float = SLACK
    lead_pad_s: float = 0.3
    tail_pad_s: float = 0.45

    @property
    def waiting(self) -> bool:
        """The listener has (about) nothing left to hear: it waits for this message's first unit."""
        return self.lead_s <= self.margin_s

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
    """One model call: its text, whether it continues the previous unit's sentence, and (paced
    plans) the audio the plan predicts the listener still holds when the unit is ready (negative:
    predicted silence), logged beside the measured lead."""

    text: str
    joined: bool = False
    planned_lead_s: float | None = None


@dataclass(slots=True)
class _Listener:
    """The simulated listener of a plan: what it holds, and what the plan has cost it so far."""

    lead: float
    units: int = 0
    wait_s: float = 0.0  # the first unit's synthesis, when the listener waits for it
    shortfall_s: float = 0.0  # predicted silence mid-message (margin included)
    cuts: int = 0
    continues: bool = False  # the last unit planned is a head whose sentence goes on

    def copy(self) -> _Listener:
        return _Listener(self.lead, self.units, self.wait_s, self.shortfall_s, self.cuts, self.continues)

    def score(self) -> tuple[float, float]:
        """Lower is better: the wait, the silence mid-message (weighted), the cuts; then more lead."""
        return self.wait_s + STALL_WEIGHT * self.shortfall_s + CUT_COST_S * self.cuts, -self.lead

    def fits(self, text: str, pace: Pace) -> bool:
        return pace.need_s(text) <= self.lead

    def add(self, head: str, rest: str | None, pace: Pace) -> float:
        """`head` is the next unit (`rest`: the part of its sentence left for the unit after);
        returns the lead the listener is predicted to hold when the unit is ready."""
        first = not self.units
        synth = pace.synth_s(head)
        ready_lead = self.lead - synth
        if first and pace.waiting:
            self.wait_s = synth
            ready_lead = 0.0
        else:
            self.shortfall_s += max(0.0, pace.need_s(head) - self.lead)
        audio = pace.audio_s(head, first=first, joined_before=self.continues, joined_after=rest is not None)
        # The listener hears this unit after what it holds; while it is made, the lead drains (a
        # listener with nothing left waits: the lead cannot go below zero).
        self.lead = max(0.0, self.lead - synth) + audio
        self.units += 1
        self.cuts += rest is not None
        self.continues = rest is not None
        return ready_lead


def _cut_offsets(sentence: str, first_clause_chars: int | None) -> list[int]:
    """Where `sentence` may be cut: at a clause mark or before a conjunction or preposition; for a
    message's first unit (`first_clause_chars` given) also after a short clause head ("Sure,") and
    where the simple plan cuts (a bare word boundary when there is nothing better)."""
    if first_clause_chars is None:
        return phrase_cut_offsets(sentence)
    offsets = set(phrase_cut_offsets(sentence, min_clause_head=SHORT_CLAUSE_HEAD))
    simple = first_clause_split(sentence, first_clause_chars)
    if simple is not None:
        offsets.add(sentence.rfind(simple[1]))
    return sorted(offsets)


def _paced(sentences: list[str], first_clause_chars: int, pace: Pace) -> list[PlannedUnit]:
    """The plan whose simulated listener hears the least silence mid-message, then has the fewest
    cuts and the shortest wait for the first unit (then holds the most audio).

    Sentence by sentence, over every way to cut it at its phrase boundaries (a dynamic programme:
    for each boundary, the best plan that ends there): a piece cut from a sentence is at least
    ``MIN_UNIT_CHARS`` long, except a message's first unit, which may be any phrase head within
    `first_clause_chars`; and a sentence whose rest is ready in time is never cut again.
    """
    best = (_Listener(pace.lead_s), list[PlannedUnit]())
    for index, sentence in enumerate(sentences):
        first = index == 0 and pace.waiting
        offsets = _cut_offsets(sentence, first_clause_chars if first else None)
        end = len(sentence)
        nodes = {0: best}
        for a in [0, *offsets]:
            if a not in nodes:
                continue
            listener, units = nodes[a]
            ends = [end] if listener.fits(sentence[a:].strip(), pace) else [*(b for b in offsets if b > a), end]
            for b in ends:
                piece = sentence[a:b].strip()
                if b < end and not (len(piece) <= first_clause_chars if listener.units == 0 and first
                                    else len(piece) >= MIN_UNIT_CHARS):
                    continue
                if b == end and a == 0 and first and len(piece) > first_clause_chars and offsets:
                    continue  # a long first sentence starts with a cut
                sim = listener.copy()
                ready = sim.add(piece, sentence[b:] if b < end else None, pace)
                if b not in nodes or sim.score() < nodes[b][0].score():
                    nodes[b] = (sim, [*units, PlannedUnit(piece, listener.continues, ready)])
        if end not in nodes:  # no cut satisfied the rules: the sentence whole
            listener, units = nodes[0]
            sim = listener.copy()
            ready = sim.add(sentence, None, pace)
            nodes[end] = (sim, [*units, PlannedUnit(sentence, listener.continues, ready)])
        best = nodes[end]
    return best[1]


def _overloaded(sentences: list[str], pace: Pace) -> bool:
    """Even whole sentences take longer to make than to play: no cut can keep the listener fed."""
    synth = sum(pace.synth_s(s) for s in sentences)
    audio = sum(pace.audio_s(s, first=False, joined_before=False, joined_after=False) for s in sentences)
    return synth >= audio


def plan_units(text: str, first_clause_chars: int, pace: Pace | None = None) -> list[PlannedUnit]:
    """The units of one message, in order; their texts together say all of `text`."""
    sentences = [s for s in (split_sentences(text) or [text]) if s.strip()]
    if not sentences:
        return []
    if pace is None or first_clause_chars <= 0 or _overloaded(sentences, pace):
        return _simple(sentences, first_clause_chars)
    return _paced(sentences, first_clause_chars, pace)


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
