"""Hypothesis properties of bidi_tts.chunker: fragment invariance, no loss, no empty output, the
length limit, flush idempotence and reuse."""

from __future__ import annotations

import re
from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bidi_tts.chunker import IncrementalSentenceChunker, split_sentences

_WS = re.compile(r"\s+")

# Pieces that exercise every rule: words, abbreviations, initials, numbers, URLs, terminators with
# closers and openers, ellipses, CJK stops, clause punctuation, list markers and line breaks.
_PIECES = [
    "Hello",
    "world",
    "the",
    "It",
    "The",
    "cat",
    "sat",
    "however",
    "Then",
    "I",
    "a",
    "we",
    "Dr.",
    "Mr.",
    "Mrs.",
    "St.",
    "e.g.",
    "i.e.",
    "etc.",
    "vs.",
    "U.S.",
    "a.m.",
    "p.m.",
    "Inc.",
    "No.",
    "Fig.",
    "Jan.",
    "Mon.",
    "Ph.D.",
    "J.",
    "R.",
    "F.",
    "approx.",
    "Jr.",
    "al.",
    "3.14",
    "$4.99",
    "1,234.5",
    "v1.2.3",
    "10:30",
    "5",
    "42",
    "2020.",
    "1.",
    "2.",
    "iv.",
    "a.",
    "https://example.com/a.b?c=d",
    "www.example.org",
    "jane@example.com",
    "report.pdf",
    ".",
    "!",
    "?",
    "?!",
    "!!!",
    "...",
    "…",
    '."',
    '!"',
    "?)",
    ".)",
    ".”",
    ".**",
    "。",
    "！",
    "？",
    '"',
    "(",
    ")",
    "“",
    "'",
    ",",
    ";",
    ":",
    " - ",
    "—",
    "`code.x`",
    "你好",
    "世界",
    "# Title",
    "(a)",
    "(ii)",
    "Elm",
    "Ave.",
    "NW",
    "ft.",
    "Apt.",
    "Great!Thanks",
    "one.This",
    "- item",
    "* item",
    " ",
    " ",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "\u00a0",
]

texts = st.lists(st.sampled_from(_PIECES), max_size=60).map(
    lambda parts: "".join(
        p if p.isspace() or not i or parts[i - 1].isspace() else " " + p for i, p in enumerate(parts)
    )
)
raw_texts = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)
any_texts = texts | raw_texts | st.text(max_size=200)


@st.composite
def text_and_cuts(draw: st.DrawFn, source: st.SearchStrategy[str] = any_texts) -> tuple[str, list[str]]:
    """A text and one random fragmentation of it."""
    text = draw(source)
    cuts = sorted(draw(st.sets(st.integers(min_value=0, max_value=len(text)), max_size=max(1, len(text)))))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in pairwise(bounds)]


def _stream(pieces: list[str], chunker: IncrementalSentenceChunker) -> list[str]:
    out: list[str] = []
    for piece in pieces:
        out += chunker.feed(piece)
    tail = chunker.flush()
    return out if tail is None else [*out, tail]


_SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("CHUNKER_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@_SETTINGS
@given(text_and_cuts())
def test_fragment_invariance(case: tuple[str, list[str]]) -> None:
    text, pieces = case
    assert _stream(pieces, IncrementalSentenceChunker()) == split_sentences(text)


@_SETTINGS
@given(any_texts)
def test_char_by_char_equals_whole(text: str) -> None:
    assert _stream(list(text), IncrementalSentenceChunker()) == split_sentences(text)


@_SETTINGS
@given(any_texts)
def test_no_loss_no_reorder_no_empty(text: str) -> None:
    out = split_sentences(text)
    assert all(s and s == s.strip() for s in out)
    assert _WS.sub("", "".join(out)) == _WS.sub("", text)


@_SETTINGS
@given(text_and_cuts(), st.integers(min_value=1, max_value=60))
def test_max_chars_respected_and_fragment_invariant(case: tuple[str, list[str]], max_chars: int) -> None:
    text, pieces = case
    out = _stream(pieces, IncrementalSentenceChunker(max_chars=max_chars))
    assert all(len(s) <= max_chars for s in out)
    assert out == split_sentences(text, max_chars=max_chars)
    assert _WS.sub("", "".join(out)) == _WS.sub("", text)


@_SETTINGS
@given(
    text_and_cuts(texts),
    st.integers(min_value=5, max_value=80),
    st.none() | st.integers(min_value=1, max_value=40),
    st.none() | st.integers(min_value=1, max_value=6),
)
def test_first_chunk_options_fragment_invariant(
    case: tuple[str, list[str]], max_chars: int, first_max: int | None, first_words: int | None
) -> None:
    text, pieces = case
    options = {"max_chars": max_chars, "first_max_chars": first_max, "first_split_words": first_words}
    streamed = _stream(pieces, IncrementalSentenceChunker(**options))  # type: ignore[arg-type]
    whole = _stream([text], IncrementalSentenceChunker(**options))  # type: ignore[arg-type]
    assert streamed == whole
    assert _WS.sub("", "".join(streamed)) == _WS.sub("", text)
    if streamed:
        assert len(streamed[0]) <= min(max_chars, first_max or max_chars)
        assert all(len(s) <= max_chars for s in streamed[1:])


@_SETTINGS
@given(text_and_cuts())
def test_flush_idempotent_and_chunker_reusable(case: tuple[str, list[str]]) -> None:
    text, pieces = case
    chunker = IncrementalSentenceChunker()
    first = _stream(pieces, chunker)
    assert chunker.flush() is None
    assert chunker.flush() is None
    assert _stream([text], chunker) == first


@_SETTINGS
@given(texts)
def test_splitting_is_stable_on_its_own_output(text: str) -> None:
    # Joining the sentences with line breaks and splitting again gives the same sentences back,
    # except that a sentence may itself contain no further boundaries: re-splitting never merges.
    out = split_sentences(text)
    again = split_sentences("\n".join(out))
    assert len(again) >= len(out)
    assert _WS.sub("", "".join(again)) == _WS.sub("", "".join(out))
