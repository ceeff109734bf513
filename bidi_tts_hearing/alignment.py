"""Which sentences were heard, where, and how often: names the cause when a transcript is wrong.

Each expected sentence is located in the transcript by a word-level alignment that is free to start
and end anywhere in it (semi-global edit distance). From where the sentences were found follows the
cause: a sentence heard nowhere was dropped, one heard twice was repeated, two heard in the wrong
order were swapped, a message whose last words are missing at the end was truncated, and a
transcript that carries the words of another text (the previous message, another session's) got
that text's audio.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

import jiwer

from bidi_tts_hearing.text import word_error_rate, words

# A sentence counts as heard where at most this share of its words is wrong: robotic speech gets about
# one word in four wrong (see docs/content.md); another sentence's words get nearly all wrong.
MATCH_MAX_ERRORS = 0.5
# The end is truncated when at least this many of the last expected words are not heard at the very end.
TRUNCATED_MIN_WORDS = 2
# ... unless what was heard there is spelled this much like them (difflib ratio): misheard, not missing.
# "jacket either way" / "hacketyer away" is 0.71; a cut-off "very cold winter" / "merry cove" is 0.52.
TAIL_SPELLED_ALIKE = 0.65


@dataclass(frozen=True, slots=True)
class Span:
    """Where a run of expected words was heard: transcript words [start, end), with `errors` edits."""

    start: int
    end: int
    errors: int
    length: int  # words expected

    @property
    def error_rate(self) -> float:
        return self.errors / self.length


def locate(expected: Sequence[str], heard: Sequence[str | None]) -> Span:
    """The stretch of `heard` that `expected` matches best (fewest word edits; masked words are None)."""
    n, m = len(expected), len(heard)
    # cost[j], origin[j]: edits to match expected[:i] ending at heard[:j], and where that match starts.
    cost = [0] * (m + 1)
    origin = list(range(m + 1))
    for i in range(1, n + 1):
        prev_cost, prev_origin = cost, origin
        cost, origin = [i] + [0] * m, [0] * (m + 1)
        for j in range(1, m + 1):
            same = heard[j - 1] is not None and heard[j - 1] == expected[i - 1]
            options = ((prev_cost[j - 1] + (0 if same else 1), prev_origin[j - 1]),  # match / substitute
                       (prev_cost[j] + 1, prev_origin[j]),  # expected word not heard
                       (cost[j - 1] + 1, origin[j - 1]))  # extra heard word
            cost[j], origin[j] = min(options)
    end = min(range(m + 1), key=lambda j: (cost[j], -j))
    return Span(origin[end], end, cost[end], n)


@dataclass(slots=True)
class Hearing:
    """What was heard of one message, judged sentence by sentence."""

    sentences: list[str]
    heard: str
    wer: float
    found: list[Span | None] = field(default_factory=list)  # per sentence, None when not heard
    problems: list[str] = field(default_factory=list)  # the causes, for people
    kinds: list[str] = field(default_factory=list)  # the same, one word each: dropped, repeated, ...

    def add(self, kind: str, problem: str) -> None:
        self.kinds.append(kind)
        self.problems.append(problem)

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        causes = "; ".join(self.problems) if self.problems else "every sentence heard once, in order"
        return f"{causes} (heard {self.heard!r}, WER {self.wer:.2f})"


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _masked(heard: list[str | None], span: Span) -> list[str | None]:
    return [None if span.start <= k < span.end else w for k, w in enumerate(heard)]


def _unheard_tail(expected: list[str], heard: list[str]) -> int:
    """How many of the last expected words were not heard: after the last word heard exactly right, fewer
    words were heard than expected (a cut-off word comes back as a guess, so it counts as not heard)."""
    chunks = jiwer.process_words(" ".join(expected), " ".join(heard)).alignments[0] if heard else []
    last_equal = next((c for c in reversed(chunks) if c.type == "equal"), None)
    tail_expected = len(expected) - (last_equal.ref_end_idx if last_equal else 0)
    tail_heard = len(heard) - (last_equal.hyp_end_idx if last_equal else 0)
    if tail_heard >= tail_expected:
        return 0
    # Robotic speech can merge words ("jacket either way" heard as "hacketyer away"): a tail that is
    # spelled much like the expected one was spoken whole, only misheard.
    said, got = "".join(expected[-tail_expected:]), "".join(heard[len(heard) - tail_heard:])
    return 0 if SequenceMatcher(None, said, got).ratio() >= TAIL_SPELLED_ALIKE else tail_expected


def hear(sentences: Sequence[str], heard: str, others: Mapping[str, str] | None = None) -> Hearing:
    """Judge transcript `heard` against the expected `sentences` of one message.

    `others` maps a label ("message 1", "session 2") to a text this message must NOT carry.
    """
    expected = [words(s) for s in sentences]
    if not all(expected):
        raise ValueError("every expected sentence needs words")
    heard_words = words(heard)
    result = Hearing(list(sentences), heard, word_error_rate(" ".join(sentences), heard))
    carried = [f"{label} ({_quote(text)})" for label, text in (others or {}).items()
               if locate(words(text), heard_words).error_rate <= MATCH_MAX_ERRORS]
    for number, (sentence, ex) in enumerate(zip(sentences, expected, strict=True), 1):
        span = locate(ex, heard_words)
        result.found.append(span if span.error_rate <= MATCH_MAX_ERRORS else None)
        if span.error_rate <= MATCH_MAX_ERRORS and \
                locate(ex, _masked(list(heard_words), span)).error_rate <= MATCH_MAX_ERRORS:
            result.add("repeated", f"sentence {number} ({_quote(sentence)}) repeated")
    if carried:
        instead = " instead of its own" if not any(result.found) else ""
        result.add("other words", f"the audio carries the words of {' and '.join(carried)}{instead}")
        if instead:
            return result
    all_words = [w for ex in expected for w in ex]
    cut = _unheard_tail(all_words, heard_words)
    # Truncated: the last sentence starts as expected and its last words are missing.
    truncated = TRUNCATED_MIN_WORDS <= cut < len(expected[-1]) and \
        locate(expected[-1][:-cut], heard_words).error_rate <= MATCH_MAX_ERRORS
    for number, where in enumerate(result.found, 1):
        if where is None and not (truncated and number == len(sentences)):
            result.add("dropped", f"sentence {number} ({_quote(sentences[number - 1])}) dropped: not heard")
    by_position = [i for _, i in sorted((s.start, i) for i, s in enumerate(result.found) if s is not None)]
    misplaced = [i + 1 for i, want in zip(by_position, sorted(by_position), strict=True) if i != want]
    if misplaced:
        result.add("swapped", f"sentences {' and '.join(map(str, sorted(misplaced)))} swapped: heard in the "
                               f"order {', '.join(str(i + 1) for i in by_position)}")
    if truncated:
        result.add("truncated", f"the end is truncated: the last {cut} words "
                               f"({_quote(' '.join(all_words[-cut:]))}) are missing or cut off")
    return result
