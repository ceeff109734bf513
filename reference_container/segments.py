"""Plan the synthesis units of one message: sentences, with the first one cut at a clause.

Kokoro's latency grows with the length of what it is given, so the first audio of a message waits
for its whole first unit. Sentences come from :mod:`bidi_tts.chunker`; a long first sentence is cut
once more at its first clause (:func:`bidi_tts.chunker.first_clause_split`, the one place that
rule lives), so the first audio leaves sooner while the rest is synthesized during playback. Later
sentences are not cut: their audio is not on the critical path and whole sentences sound better.
"""

from __future__ import annotations

from bidi_tts.chunker import first_clause_split, split_sentences

__all__ = ["first_clause_split", "plan_segments", "plan_units"]


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
