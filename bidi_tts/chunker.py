"""Incremental sentence chunker: text fragments in (an LLM's tokens), speakable sentences out.

:class:`IncrementalSentenceChunker` is a small scanner that keeps a scan position in its buffer and
looks at every character a bounded number of times, so its cost is linear in the input whatever the
fragmentation. A sentence is released the moment its end is certain; the chunker holds back only
the lookahead that the boundary decision needs (after "word." it must see the next non-space
character; after "U.S." the next word). :func:`split_sentences` applies the same rules to a whole
string: ``split_sentences(t) == chunker.feed(t) + [chunker.flush()]`` (without a ``None``), and
any fragmentation of ``t`` fed piece by piece yields the same list.

Rules, in the order they are applied:

1. **Line breaks** (``\\n``, ``\\r``, U+2028, ...) always end a sentence: lines, blank-line
   paragraphs, markdown headings and list items come out one per line.
2. **Terminator runs**: a run of ``. ! ? … ‽`` and closers (quotes, brackets, ``*``, ``_``) such
   as ``?!``, ``."`` or ``.)`` is a candidate. It never ends a sentence when a non-space character
   follows directly (``3.14``, ``v1.2.3``, ``e.g.,``, ``example.com/a.b``, ``report.pdf``,
   ``wait...what``), except after the CJK stops ``。！？`` which end a sentence with no space,
   ``!``/``?`` directly before a CJK character, and a missing space before a capitalised word after
   ``!``/``?`` or a plain lowercase word (``one.This``, ``Great!Thanks``; not ``Node.Js``). A line
   break after the run always ends it. Otherwise
   the first significant character after the whitespace (skipping opening quotes and brackets)
   decides, with the token before the run:

   - ``!`` or ``?`` in the run: a boundary unless a lowercase word follows (``"Stop!" he said``).
   - an ellipsis (``...``, ``…``): a boundary unless a lowercase word follows.
   - a single ``.``: never before a lowercase word (the period was an abbreviation's); never after
     a list marker (``1.``, ``a.``, ``iv.``) at the start of a sentence or after a colon; never
     after a title (``Dr.``, ``Mrs.``, ``St. Louis``) or ``e.g.``/``i.e.``/``vs.``; after ``No.``,
     ``Fig.``, ``Jan.``, ``p.``, ``ft.`` only before a number or a roman numeral; after ``etc.``,
     ``Inc.``, ``a.m.``, ``Jr.`` a boundary before a capitalised word (our documented choice: a
     capital after a sentence-final abbreviation starts a new sentence) but not before a number;
     after an initial or initialism (``J.``, ``U.S.``, ``Ph.D.``) a boundary only before a word
     that nearly always starts a sentence (``The``, ``It``, ``However``...), so ``J. R. R.
     Tolkien`` and ``U.S. Army`` stay whole (the same test applies to ``St.`` after a capitalised
     name: ``Elm St. His...`` ends, ``East St. Louis`` does not); after ``a.m.``/``p.m.`` as the
     third word of a sentence ("At 7 a.m. Ms. Lee...") no boundary; after any other word, a
     boundary.
   - **inline lists**: in a sentence that opens with a list marker (``1.``, ``1.)``, ``1)``,
     ``a.``, optionally after a bullet ``•``/``⁃``), the next marker of the same style (``2.``,
     ``2.)``, ``2)``, ``b.``) starts a new sentence *before* it: ``1.) Boil 2.) Add`` gives two.
   - **ellipses**: ``[...]`` never ends a sentence; a spaced ``. . .`` inside a sentence does not
     either, while a spaced ``. . . .`` (ellipsis plus period) does; a word's period followed by
     a spaced ``. . .`` and a capitalised word ends the sentence at that period
     (``farms. . . . The custom`` gives ``farms.`` and ``. . . The custom``).
3. **Length**: a sentence never exceeds ``max_chars``. Text that reaches the limit is cut at the
   last clause boundary (``,`` ``;`` ``:`` followed by a space, a spaced ``-``, or a dash
   ``—``/``–``), else at the last word boundary, else (one word longer than the limit) at the
   limit itself. A terminator run whose lookahead would need a character beyond the limit ends the
   sentence there, and whitespace that runs past the limit cuts at once: the sentence could not
   grow anyway, and this keeps the buffer bounded (one sentence plus a few dozen characters).
4. **First chunk** (off by default): ``first_max_chars`` gives the first released chunk its own,
   shorter limit, and ``first_split_words`` releases the first chunk at its first clause boundary
   once it holds that many words, so speech can start sooner. :func:`first_clause_split` is the
   same idea for a whole sentence that is already known (the reference container's first unit).

At :meth:`IncrementalSentenceChunker.flush` a decision still waiting for lookahead resolves as
"no boundary": the rest of the text is one last sentence, so ``flush`` never has two to return.
Outputs are stripped of surrounding whitespace and never empty, and their concatenation equals the
input once whitespace is removed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum, auto
from typing import Final

from bidi_tts._abbreviations import (
    ALWAYS_CONTINUE,
    BEFORE_NUMBER,
    COMPASS,
    DAYS,
    MONTHS,
    SENTENCE_FINAL,
    SENTENCE_STARTERS,
    STREETS,
    TIME_OF_DAY,
    TIME_ZONES,
    TITLES,
)

__all__ = [
    "DEFAULT_MAX_CHARS", "IncrementalSentenceChunker", "first_clause_split", "phrase_cut_offsets", "split_sentences",
]

DEFAULT_MAX_CHARS: Final = 300

NEWLINES: Final = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_CJK_STOPS: Final = frozenset("。！？｡")
_STRONG: Final = frozenset("!?‽！？")
TERMINATORS: Final = frozenset(".!?…‽") | _CJK_STOPS
CLOSERS: Final = frozenset("\"'”’)]}»›*_」』）】〕〗〙〛〉》＂")
OPENERS: Final = frozenset("\"'“‘([{«‹¿¡*_「『（【〔〈《＂`")
_RUN_CHARS: Final = TERMINATORS | CLOSERS
_CLAUSE_PUNCT: Final = frozenset(",;:")
_DASHES: Final = frozenset("—–")
_DASH_TOKENS: Final = frozenset({"-", "--", "—", "–", "‐"})
_MAX_OPENERS: Final = 8  # opening punctuation skipped when looking for the next word
_MAX_WORD: Final = 20  # longer than any word in the lists; a longer word decides "not listed"

# Characters the scanner must look at one by one; everything else is skipped in bulk.
_INTERESTING: Final = re.compile(r"[\s.!?…‽。！？｡—–]")
_SPACES_NO_NEWLINE: Final = re.compile(r"[^\S\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")
_LIST_MARKER: Final = re.compile(
    r"\d{1,3}|[A-Za-z]|(?=.)x{0,3}(?:ix|iv|v?i{0,3})|(?=.)X{0,3}(?:IX|IV|V?I{0,3})"
)
_ENUM_MARKER: Final = re.compile(r"[a-z]|[ivx]{1,4}")
_ROMAN: Final = re.compile(r"[IVXLCDM]{2,8}")
# "U.S", "Ph.D", "M.Sc", "a.k.a" (not "co.uk": all-lowercase segments must be single letters).
_INITIALISM: Final = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]|(?=.*[A-Z])(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}")
_TOKEN_TAIL: Final = re.compile(r"[-/–—‐]")
# Inline list items ("1.) Boil 2.) Add", "a. Boil b. Add", "• 7. Boil • 8. Add"): the marker that
# opens a sentence, and the bullets that may stand before a marker.
_BULLETS: Final = "•⁃◦▪‣"
_ITEM_START: Final = re.compile(r"[•⁃◦▪‣]?\s{0,3}(\d{1,3}|[a-z])(\.\)|\.|\))(?=\s)")
_ITEM_MARKER: Final = re.compile(r"\d{1,3}|[a-z]")
_ITEM_PAREN: Final = re.compile(r"(\d{1,3}|[a-z])\)")
# A spaced ellipsis after a word's period, then a capital: "farms. . . . The" ends after "farms.".
_SPACED_DOTS: Final = re.compile(r"\. \. \. +[\"'“‘(\[]{0,3}(\S)")
_SPACED_DOTS_PREFIX: Final = re.compile(r"\.(?: (?:\.(?: (?:\.(?: +[\"'“‘(\[]{0,3})?)?)?)?)?")
_SPACED_DOTS_SPAN: Final = 16


class _Decision(Enum):
    SPLIT = auto()  # the run ends a sentence
    CONTINUE = auto()  # the run is inside a sentence
    CUT = auto()  # the run itself crosses the length limit
    SPLIT_BEFORE = auto()  # a new list item starts at self._item_at: the sentence ends before it
    WAIT = auto()  # the decision needs characters not received yet


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return 0x3000 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF


# Buffer indices held between feeds; shifted together when the buffer is compacted.
_INDEX_FIELDS: Final = (
    "_tok",
    "_ptok",
    "_ptok_end",
    "_clause",
    "_word",
    "_run_at",
    "_run_pos",
    "_la_run",
    "_la_pos",
    "_item_at",
)


class IncrementalSentenceChunker:
    """Turn a stream of text fragments into complete sentences, released as early as is certain.

    Args:
        max_chars: the longest sentence released; longer run-on text is cut at a clause or word
            boundary (see the module docstring).
        first_max_chars: a separate, usually shorter, limit for the first chunk released.
        first_split_words: release the first chunk at its first clause boundary (``,`` ``;`` ``:``
            or a spaced dash) once it holds at least this many words.

    After :meth:`flush` the chunker is empty and ready for a new stream (with a new first chunk).
    """

    def __init__(
        self,
        max_chars: int = DEFAULT_MAX_CHARS,
        *,
        first_max_chars: int | None = None,
        first_split_words: int | None = None,
    ) -> None:
        for name, value in (
            ("max_chars", max_chars),
            ("first_max_chars", first_max_chars),
            ("first_split_words", first_split_words),
        ):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.max_chars = max_chars
        self.first_max_chars = first_max_chars
        self.first_split_words = first_split_words
        self._buf = ""
        self._pos = 0  # next index to scan
        self._emitted = False
        self._reset_segment()

    def _reset_segment(self) -> None:
        self._seg = -1  # start of the current sentence (a non-space index), -1 while between sentences
        self._limit = 0  # index of the first character that would make the sentence too long
        self._tok = -1  # start of the current token, -1 in whitespace
        self._tok_prev = ""  # last non-space character before the current token
        self._ptok = -1  # start of the previous token in this sentence ...
        self._ptok_end = -1  # ... and its end
        self._last = ""  # last non-space character scanned
        self._clause = -1  # last clause-boundary cut index in this sentence
        self._word = -1  # last word-boundary cut index in this sentence
        self._words = 0
        self._run_at = -1  # start of the terminator run being read ...
        self._run_pos = -1  # ... and how far it has been read
        self._la_run = -1  # run start whose lookahead whitespace is cached ...
        self._la_pos = -1  # ... and how far that whitespace has been checked
        self._item_at = -1  # where a new inline list item starts (with SPLIT_BEFORE)

    # -- public API ---------------------------------------------------------------------------

    def feed(self, fragment: str) -> list[str]:
        """Add a fragment; return the sentences that are now certainly complete, in order."""
        if not isinstance(fragment, str):
            raise TypeError(f"fragment must be str, got {type(fragment).__name__}")
        out: list[str] = []
        if fragment:
            self._buf += fragment
            self._scan(out, final=False)
            self._compact()
        return out

    def flush(self) -> str | None:
        """End the stream: return what is left as the last sentence (or None), and reset."""
        out: list[str] = []
        self._scan(out, final=True)
        if self._seg >= 0:
            self._emit(out, len(self._buf))
        self._buf = ""
        self._pos = 0
        self._emitted = False
        self._reset_segment()
        if not out:
            return None
        # By construction at most one sentence is left at the end (see the module docstring);
        # joining is a never-lose-text fallback, not an expected path.
        return out[0] if len(out) == 1 else " ".join(out)

    # -- scanner ------------------------------------------------------------------------------

    def _start_segment(self, i: int) -> None:
        self._seg = i
        limit = self.max_chars
        if self.first_max_chars and not self._emitted:
            limit = min(limit, self.first_max_chars)
        self._limit = i + limit

    def _emit(self, out: list[str], end: int) -> None:
        piece = self._buf[self._seg : end].strip()
        if piece:
            out.append(piece)
            self._emitted = True
        self._reset_segment()

    def _cut(self, out: list[str]) -> int:
        """Cut the current sentence at its length limit; return the index to scan next."""
        if self._clause > self._seg:
            end = self._clause
        elif self._word > self._seg:
            end = self._word
        else:
            end = self._limit  # a single word longer than the limit
        self._emit(out, end)
        return end

    def _scan(self, out: list[str], *, final: bool) -> None:
        buf = self._buf
        n = len(buf)
        i = self._pos
        while i < n:
            ch = buf[i]
            if self._seg < 0:
                if ch.isspace():
                    i += 1
                    continue
                self._start_segment(i)
            if ch.isspace():
                if ch in NEWLINES:
                    self._emit(out, i)
                    i += 1
                    continue
                if self._tok >= 0:
                    self._end_token(i)
                    at = self._paren_item_at()
                    if at >= 0:
                        self._split_before(out, at, self._ptok, i)
                    if (
                        self._clause == i
                        and self.first_split_words
                        and not self._emitted
                        and self._words >= self.first_split_words
                    ):
                        self._emit(out, i)
                        i += 1
                        continue
                m = _SPACES_NO_NEWLINE.match(buf, i)
                end = m.end() if m else i + 1
                if end > self._limit:
                    # Whitespace reached the limit: any further word would be cut here anyway, and
                    # cutting now keeps the buffer bounded on endless whitespace.
                    i = self._cut(out)
                    continue
                i = end
                continue
            if i >= self._limit:
                i = self._cut(out)
                continue
            if self._tok < 0:
                self._tok = i
                self._tok_prev = self._last
                self._words += 1
            if ch in TERMINATORS:
                decision, end = self._decide(i, final)
                if decision is _Decision.WAIT:
                    break
                if decision is _Decision.CUT:
                    i = self._cut(out)
                elif decision is _Decision.SPLIT:
                    self._emit(out, end)
                    i = end
                elif decision is _Decision.SPLIT_BEFORE:
                    self._split_before(out, self._item_at, self._tok, -1)
                    self._last = buf[end - 1]
                    i = end
                else:
                    self._last = buf[end - 1]
                    i = end
                continue
            if ch in _DASHES:
                self._clause = i + 1
                self._last = ch
                i += 1
                continue
            m = _INTERESTING.search(buf, i + 1)
            stop = m.start() if m else n
            if stop > self._limit:
                i = self._cut(out)
                continue
            self._last = buf[stop - 1]
            i = stop
        self._pos = i

    def _end_token(self, i: int) -> None:
        """Record the word (and maybe clause) boundary at whitespace index `i` ending a token."""
        token = self._buf[self._tok : i]
        bare = token.rstrip("".join(CLOSERS))
        if (bare and bare[-1] in _CLAUSE_PUNCT) or token in _DASH_TOKENS:
            self._clause = i
        self._word = i
        self._ptok, self._ptok_end = self._tok, i
        self._tok = -1

    # -- inline list items ---------------------------------------------------------------------

    def _item_start(self, tok: int) -> int:
        """Where the list item whose marker token starts at `tok` begins: at a lone bullet just
        before it ("• 8."), else at the token."""
        buf = self._buf
        q = tok - 1
        while q > self._seg and tok - q <= 4 and buf[q].isspace() and buf[q] not in NEWLINES:
            q -= 1
        if q >= self._seg and q < tok - 1 and buf[q] in _BULLETS and (q == self._seg or buf[q - 1].isspace()):
            return q
        return tok

    def _next_item(self, marker: str, punct: str) -> bool:
        """True when the sentence opened with a list marker of the same style that `marker`
        follows ("1.)" then "2.)", "a." then "b."): the marker starts the next item."""
        m = _ITEM_START.match(self._buf, self._seg)
        if m is None or m.group(2) != punct:
            return False
        first = m.group(1)
        if first.isdigit() != marker.isdigit():
            return False
        return int(marker) == int(first) + 1 if marker.isdigit() else ord(marker) == ord(first) + 1

    def _paren_item_at(self) -> int:
        """After a token "2)" ends: where the next "1) ... 2) ..." item starts, or -1."""
        tok, end = self._ptok, self._ptok_end
        core = self._buf[tok:end].lstrip(_BULLETS)
        m = _ITEM_PAREN.fullmatch(core)
        if m is None or not self._next_item(m.group(1), ")"):
            return -1
        at = self._item_start(tok)
        return at if at > self._seg else -1

    def _split_before(self, out: list[str], at: int, tok: int, tok_end: int) -> None:
        """End the sentence before index `at` and start the next one there; the marker token at
        `tok` (ended at `tok_end`, or still being read when that is -1) belongs to the new one."""
        self._emit(out, at)
        self._start_segment(at)
        self._words = 1 + (tok > at)
        if tok_end < 0:
            self._tok, self._tok_prev = tok, self._buf[tok - 1] if tok > at else ""
        else:
            self._ptok, self._ptok_end, self._word = tok, tok_end, tok_end
        self._last = self._buf[tok_end - 1] if tok_end > 0 else self._last

    def _compact(self) -> None:
        """Drop the released prefix of the buffer, once per feed (keeps feeds linear)."""
        keep = self._seg if self._seg >= 0 else self._pos
        if keep <= 0:
            return
        self._buf = self._buf[keep:]
        self._pos -= keep
        if self._seg >= 0:
            self._seg -= keep
            self._limit -= keep
            for name in _INDEX_FIELDS:
                value = getattr(self, name)
                if value >= 0:
                    setattr(self, name, value - keep)

    # -- boundary decision --------------------------------------------------------------------

    def _decide(self, j: int, final: bool) -> tuple[_Decision, int]:
        """Decide whether the terminator run starting at `j` ends the sentence.

        Returns the decision and the index just after the run. WAIT is returned only when the
        answer truly depends on characters not yet received; at the end of the stream (`final`)
        such a decision is CONTINUE, so the remaining text stays one sentence.
        """
        buf = self._buf
        n = len(buf)
        k = self._run_pos if self._run_at == j else j  # resume a run already read up to the buffer end
        while k < n and buf[k] in _RUN_CHARS:
            if k >= self._limit:
                return _Decision.CUT, k
            k += 1
        self._run_at, self._run_pos = j, k
        wait = _Decision.CONTINUE if final else _Decision.WAIT
        if k == n:
            return wait, k
        run = buf[j:k]
        if any(c in _CJK_STOPS for c in run):
            return _Decision.SPLIT, k
        if j > 0 and buf[j - 1] == "[" and run.startswith(("...]", "…]")):
            return _Decision.CONTINUE, k  # "[...]" marks words left out, never an end
        strong = any(c in _STRONG for c in run)
        nxt = buf[k]
        if not nxt.isspace():
            if _is_cjk(nxt) and (strong or (j > 0 and _is_cjk(buf[j - 1]))):
                return _Decision.SPLIT, k
            if nxt.isupper() and k + 1 < self._limit and (strong or self._plain_word_before(j, run)):
                # A missing space ("one.This", "Great!Thanks"): a capitalised word right after.
                if k + 1 == n:
                    return wait, k
                if buf[k + 1].islower():
                    return _Decision.SPLIT, k
            return _Decision.CONTINUE, k

        # Whitespace follows: find the first significant character, remembering how far the
        # whitespace was already checked so a long run of spaces is not re-read on every feed.
        m = self._la_pos if self._la_run == j else k
        while m < n and buf[m].isspace():
            if buf[m] in NEWLINES or m >= self._limit:
                return _Decision.SPLIT, k
            m += 1
        self._la_run, self._la_pos = j, m
        if m == n:
            return wait, k
        p = m
        while p < n and buf[p] in OPENERS and p - m < _MAX_OPENERS:
            p += 1
        if p >= self._limit:
            return _Decision.SPLIT, k  # the sentence cannot grow past here anyway
        if p == n:
            return wait, k
        d = buf[p]
        if d == "." and run == "." and p == m and 0 <= self._tok < j:
            return self._before_spaced_dots(m, k, final)
        if d in TERMINATORS or d in CLOSERS or d in _CLAUSE_PUNCT:
            return _Decision.CONTINUE, k  # spaced ellipsis ". . ." or stray punctuation
        if run == "." and self._tok == j and self._spaced_dots_before(j) == 3:
            return _Decision.CONTINUE, k  # the last dot of ". . ." inside a sentence
        lower = d.islower()
        if lower and p == m + 1 and buf[m] == "(":
            # An enumeration marker "(a)", "(iv)" opens a new item despite its lowercase letter.
            horizon = min(p + 5, self._limit)
            close = buf.find(")", p, min(n, horizon))
            if close < 0 and n < horizon:
                return wait, k
            lower = close < 0 or not _ENUM_MARKER.fullmatch(buf, p, close)
        if strong or "…" in run or run.count(".") >= 2:
            return (_Decision.CONTINUE if lower else _Decision.SPLIT), k
        if lower:
            return _Decision.CONTINUE, k
        return self._decide_period(j, k, p, final)

    def _before_spaced_dots(self, m: int, k: int, final: bool) -> tuple[_Decision, int]:
        """A word's period followed by ". . ." (`m` is the first spaced dot): the sentence ends at
        the period when a capitalised word follows the dots ("farms. . . . The custom")."""
        buf = self._buf
        tail = buf[m : m + _SPACED_DOTS_SPAN]
        found = _SPACED_DOTS.match(tail)
        if found is not None:
            return (_Decision.SPLIT if found.group(1).isupper() else _Decision.CONTINUE), k
        if len(tail) < _SPACED_DOTS_SPAN and _SPACED_DOTS_PREFIX.fullmatch(tail) and not final:
            return _Decision.WAIT, k
        return _Decision.CONTINUE, k

    def _spaced_dots_before(self, j: int) -> int:
        """How many dots of a spaced run ". . ." end at the lone dot `j` (within the sentence)."""
        buf = self._buf
        count, q = 1, j
        while count < 5 and q - 2 >= self._seg and buf[q - 1] == " " and buf[q - 2] == ".":
            if q - 3 >= self._seg and not buf[q - 3].isspace():
                break  # a word's own period ("farms."), not a spaced dot
            count += 1
            q -= 2
        return count

    def _plain_word_before(self, j: int, run: str) -> bool:
        """True when a lone "." at `j` follows a plain lowercase word ("one." but not "e.g.",
        "Node.", "example.com/a." or "x.")."""
        token = self._buf[self._tok : j] if 0 <= self._tok < j else ""
        return run == "." and len(token) >= 2 and token.isalpha() and token.islower()

    def _after_name(self) -> bool:
        """True when the previous token of the sentence is a capitalised plain word ("Elm")."""
        prev = self._buf[self._ptok : self._ptok_end] if self._ptok >= 0 else ""
        return prev.isalpha() and prev[:1].isupper()

    def _decide_period(self, j: int, k: int, p: int, final: bool) -> tuple[_Decision, int]:
        """A single period before a non-lowercase character at `p`: look at the token before it."""
        buf = self._buf
        token = buf[self._tok : j].lstrip("".join(OPENERS)) if 0 <= self._tok < j else ""
        d = buf[p]
        upper = d.isupper()
        digit = d.isdigit()
        split, cont = (_Decision.SPLIT, k), (_Decision.CONTINUE, k)
        if not token:
            return split
        core = token.lstrip(_BULLETS)
        if _LIST_MARKER.fullmatch(core) and (
            self._tok == self._seg or self._tok_prev == ":" or self._item_start(self._tok) == self._seg
        ):
            return cont
        if run_is_item(buf[j:k]) and _ITEM_MARKER.fullmatch(core) and self._next_item(core, buf[j:k]):
            at = self._item_start(self._tok)
            if at > self._seg:
                self._item_at = at
                return _Decision.SPLIT_BEFORE, k
        tail = _TOKEN_TAIL.split(token)[-1] or token
        low = tail.lower()
        if tail == "St" and upper and self._after_name():
            # "Elm St." is a street and may end the sentence; "St. Louis", "Mt. St. Helens" are saints.
            return self._word_rule(p, k, final, lambda w, after: w not in SENTENCE_STARTERS or after == ".")
        if tail in TITLES or (tail[:1].isupper() and tail.capitalize() in TITLES):
            return cont
        if low in ALWAYS_CONTINUE:
            return cont
        if low in BEFORE_NUMBER and (len(tail) > 1 or tail.islower()):
            if digit:
                return cont
            if not upper:
                return split
            return self._word_rule(p, k, final, lambda w, _after: bool(_ROMAN.fullmatch(w)))
        if low in DAYS:
            if digit:
                return cont
            if not upper:
                return split
            return self._word_rule(p, k, final, lambda w, _after: w.lower() in MONTHS)
        if low in SENTENCE_FINAL:
            if digit:
                return cont
            if upper and low in STREETS:
                return self._word_rule(p, k, final, lambda w, _after: w in COMPASS)
            if upper and low in TIME_OF_DAY:
                if self._words <= 3:
                    return cont  # an opening time, "At 7 a.m. Ms. Lee ..."
                return self._word_rule(p, k, final, lambda w, _after: w in TIME_ZONES)
            return split
        initial = len(tail) == 1 and tail.isupper()
        if initial or _INITIALISM.fullmatch(tail):
            if digit:
                return cont
            if not upper:
                return split
            # A starter word followed by "." is itself an initial ("J. A. Smith").
            return self._word_rule(p, k, final, lambda w, after: w not in SENTENCE_STARTERS or after == ".")
        return split

    def _word_rule(
        self, p: int, k: int, final: bool, continues: Callable[[str, str], bool]
    ) -> tuple[_Decision, int]:
        """Decide from the whole word at `p`: `continues(word, char_after)` True means no boundary.

        A word is letters only ("It's" reads as "It"), at most ``_MAX_WORD`` of them. When the word
        would run past the length limit the sentence ends here (it could not grow anyway); when it
        may not be complete yet the decision waits (or, at the end of the stream, continues).
        """
        buf = self._buf
        n = len(buf)
        q = p
        while q < n and buf[q].isalpha() and q - p < _MAX_WORD:
            q += 1
            if q >= self._limit:
                return _Decision.SPLIT, k
        if q == n:
            return (_Decision.CONTINUE if final else _Decision.WAIT), k
        return (_Decision.CONTINUE if continues(buf[p:q], buf[q]) else _Decision.SPLIT), k


def run_is_item(run: str) -> bool:
    """A terminator run that can close a list marker: "." or ".)"."""
    return run in (".", ".)")


def split_sentences(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> list[str]:
    """Split a whole text into sentences with exactly the rules of :class:`IncrementalSentenceChunker`."""
    chunker = IncrementalSentenceChunker(max_chars=max_chars)
    out = chunker.feed(text)
    tail = chunker.flush()
    return out if tail is None else [*out, tail]


# -- the first clause of a known sentence -----------------------------------------------------------

#: Shortest head worth its own model call, and shortest rest (a lone last word sounds worse than the
#: latency it saves).
MIN_HEAD_CHARS: Final = 12
MIN_REST_CHARS: Final = 15
# The clause boundaries the scanner knows (``,`` ``;`` ``:`` and dashes before a space, a spaced
# dash token), as one pattern whose match ends where the cut goes.
_CLAUSE_CUT: Final = re.compile(
    "[" + re.escape("".join(sorted(_CLAUSE_PUNCT | _DASHES))) + r"](?=\s)"
    + r"|\s(?:" + "|".join(re.escape(t) for t in sorted(_DASH_TOKENS, key=len, reverse=True)) + r")\s"
)
_BREAK_WORDS: Final = (
    "and but or so because which that when while where who if although though since unless until "
    "with without near over under into onto from for to in on at by after before about across through"
).split()
_BREAK_BEFORE: Final = re.compile(r"\s(?=(?:" + "|".join(_BREAK_WORDS) + r")\b)", re.IGNORECASE)


def first_clause_split(sentence: str, max_head_chars: int) -> tuple[str, str] | None:
    """Cut a long sentence into (head, rest), the head at most `max_head_chars` long, or None.

    The cut goes at the first clause boundary in reach, else before the last conjunction or
    preposition in reach, else at the last word boundary that leaves a rest worth its own unit.
    """
    if len(sentence) <= max_head_chars:
        return None
    window = sentence[: max_head_chars + 1]
    for pattern in (_CLAUSE_CUT, _BREAK_BEFORE):
        cuts = [m.end() for m in pattern.finditer(window)
                if m.start() >= MIN_HEAD_CHARS and len(sentence) - m.end() >= MIN_REST_CHARS]
        if cuts:
            cut = cuts[0] if pattern is _CLAUSE_CUT else cuts[-1]
            break
    else:
        cut = sentence.rfind(" ", 0, min(max_head_chars, len(sentence) - MIN_REST_CHARS) + 1)
        if cut < MIN_HEAD_CHARS:
            return None
    head, rest = sentence[:cut].strip(), sentence[cut:].strip()
    return (head, rest) if head and rest else None


def phrase_cut_offsets(sentence: str, *, min_clause_head: int = MIN_HEAD_CHARS) -> list[int]:
    """Every place `sentence` may be cut at a phrase boundary: after a clause mark, or before a
    conjunction or preposition (offsets where the rest starts, in order). The same boundaries and
    minimum lengths as :func:`first_clause_split`; `min_clause_head` lets a head that ends at a
    clause mark be shorter ("Sure," "Well,": a phrase of its own, spoken with its own pause)."""
    out: set[int] = set()
    for pattern in (_CLAUSE_CUT, _BREAK_BEFORE):
        shortest = min_clause_head if pattern is _CLAUSE_CUT else MIN_HEAD_CHARS
        out.update(m.end() for m in pattern.finditer(sentence)
                   if m.start() >= shortest and len(sentence) - m.end() >= MIN_REST_CHARS)
    return sorted(out)
