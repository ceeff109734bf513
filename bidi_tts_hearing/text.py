"""Text normalization and word error rate: what counts as "the same words" when hearing speech.

Case, punctuation, hyphens and contractions are normalized with jiwer's transforms; numbers are read
as words with num2words ("7" and "seven" are the same word, as a listener hears them).
"""

from __future__ import annotations

import re

import jiwer
from num2words import num2words

_ORDINAL = re.compile(r"\b(\d+)(st|nd|rd|th)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")

_NORMALIZE = jiwer.Compose([
    jiwer.ToLowerCase(),
    jiwer.ExpandCommonEnglishContractions(),
    jiwer.SubstituteRegexes({r"[-–—/]": " "}),
    jiwer.RemovePunctuation(),
    jiwer.RemoveMultipleSpaces(),
    jiwer.Strip(),
])


def _spell_numbers(text: str) -> str:
    text = _THOUSANDS.sub("", text)
    text = _ORDINAL.sub(lambda m: " " + num2words(int(m.group(1)), to="ordinal") + " ", text)
    return _NUMBER.sub(lambda m: " " + num2words(float(m.group()) if "." in m.group() else int(m.group())) + " ",
                       text)


def normalize(text: str) -> str:
    """Lower-case words separated by single spaces; no punctuation; numbers spelled out."""
    return str(_NORMALIZE(_spell_numbers(text)))


def words(text: str) -> list[str]:
    """The normalized words of `text`."""
    return normalize(text).split()


def word_error_rate(reference: str, heard: str) -> float:
    """Normalized WER of `heard` against `reference` (1.0 when nothing was heard)."""
    ref, hyp = normalize(reference), normalize(heard)
    if not ref:
        raise ValueError("the reference text has no words")
    if not hyp:
        return 1.0
    return float(jiwer.wer(ref, hyp))
