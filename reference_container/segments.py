"""Plan the synthesis units of one message: sentences, with the first one cut at a clause.

Kokoro's latency grows with the length of what it is given, so the first audio of a message waits
for its whole first unit. Sentences come from :mod:`bidi_tts.chunker`; a long first sentence is cut
once more, at its first clause boundary (punctuation, else before a conjunction or preposition,
else at a word boundary), so the first audio leaves sooner while the rest is synthesized during
playback. Later sentences are not cut: their audio is not on the critical path and whole
sentences sound better.
"""

from __future__ import annotations

import re

from bidi_tts.chunker import split_sentences

MIN_HEAD_CHARS = 12
MIN_REST_CHARS = 15  # a lone last word sounds worse than the latency it saves
_CLAUSE_PUNCT = re.compile(r"[,;:—–](?=\s)|\s[-–—]\s")
_BREAK_WORDS = (
    "and but or so because which that when while where who if although though since unless until "
    "with without near over under into onto from for to in on at by after before about across through"
).split()
_BREAK_BEFORE = re.compile(r"\s(?=(?:" + "|".join(_BREAK_WORDS) + r")\b)", re.IGNORECASE)


def first_clause_split(sentence: str, max_head_chars: int) -> tuple[str, str] | None:
    """Cut a long sentence into (head, rest) with a head of at most `max_head_chars`, or None."""
    if len(sentence) <= max_head_chars:
        return None
    window = sentence[: max_head_chars + 1]
    for pattern in (_CLAUSE_PUNCT, _BREAK_BEFORE):
        cuts = [m.end() for m in pattern.finditer(window)
                if m.start() >= MIN_HEAD_CHARS and len(sentence) - m.end() >= MIN_REST_CHARS]
        if cuts:
            cut = cuts[0] if pattern is _CLAUSE_PUNCT else cuts[-1]
            break
    else:
        # The last word boundary in the window that still leaves a rest worth its own unit.
        cut = sentence.rfind(" ", 0, min(max_head_chars, len(sentence) - MIN_REST_CHARS) + 1)
        if cut < MIN_HEAD_CHARS:
            return None
    head, rest = sentence[:cut].strip(), sentence[cut:].strip()
    return (head, rest) if head and rest else None


def plan_units(text: str, first_clause_chars: int) -> tuple[list[str], bool]:
    """The units of one message, and whether the first one was cut mid-sentence."""
    sentences = [s for s in (split_sentences(text) or [text]) if s.strip()]
    if not sentences:
        return [], False
    if first_clause_chars > 0 and (split := first_clause_split(sentences[0], first_clause_chars)):
        return [*split, *sentences[1:]], True
    return sentences, False


def plan_segments(text: str, first_clause_chars: int) -> list[str]:
    """The units to synthesize for one message, in order; their concatenation speaks all of `text`."""
    return plan_units(text, first_clause_chars)[0]
