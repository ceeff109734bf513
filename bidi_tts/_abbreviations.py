"""Curated word lists for :mod:`bidi_tts.chunker`'s boundary decisions after a period.

Each set holds tokens *without* their final period, compared as described on each set. The lists
encode what usually follows the abbreviation, which is what a boundary decision needs:

- :data:`TITLES` precede a name and never end a sentence ("Dr. Smith", "St. Louis").
- :data:`ALWAYS_CONTINUE` are Latin/connective abbreviations that sit inside a sentence ("e.g.").
- :data:`BEFORE_NUMBER` precede a number ("No. 5", "Fig. 3", "Jan. 5") and end no sentence before
  one; before a capitalised word they do end it ("Say no. Then...").
- :data:`SENTENCE_FINAL` often end a sentence ("etc.", "Inc.", "a.m."): followed by a capitalised
  word they end it, followed by a lowercase word or a number they do not.
"""

from __future__ import annotations

# Compared exactly as written (capitalised): "Dr" and "DR" match, "dr" does not.
TITLES: frozenset[str] = frozenset(
    """
    Mr Mrs Ms Mx Messrs Mmes Mme Mlle Dr Drs Prof Profs Rev Revd Hon Rt Gen Col Lt Capt Cpt Cmdr Cdr
    Sgt Cpl Pvt Maj Adm Brig Gov Sen Sens Rep Reps Pres Supt Insp Det Fr Br Sra Srta Sto Sta St Ste
    Mt Mts Ft Pt Msgr Atty Amb Treas Dir Asst Assoc Lieut Comdr Hr Dra Hno Pte Bro
    """.split()
)

# Compared case-insensitively.
ALWAYS_CONTINUE: frozenset[str] = frozenset(
    """
    e.g eg i.e ie vs v cf viz a.k.a aka w.r.t c.f i.a n.b approx appx
    """.split()
)

# Compared case-insensitively, except one-letter entries which must be lowercase ("p. 5", "c. 1900")
# so that capital initials stay initials.
BEFORE_NUMBER: frozenset[str] = frozenset(
    """
    no nos nr num fig figs eq eqs tab tbl sec sect secs ch chap chs art arts par para paras pg pgs p pp
    vol vols pt pts ex op ref refs ca c est col cols n nn rev ver
    jan feb mar apr jun jul aug sep sept oct nov dec
    ft in yd mi lb lbs oz hr hrs tsp tbsp apt bldg fl rm n° nº
    """.split()
)

# Day abbreviations continue before a number or a month ("Mon. Jan. 5", "Fri. 12").
DAYS: frozenset[str] = frozenset("mon tue tues wed thu thur thurs fri sat sun".split())

MONTHS: frozenset[str] = frozenset(
    """
    jan feb mar apr may jun jul aug sep sept oct nov dec january february march april june july august
    september october november december
    """.split()
)

# Compared case-insensitively; dotted forms are written with their inner dots.
SENTENCE_FINAL: frozenset[str] = frozenset(
    """
    etc al inc ltd co corp llc plc llp bros jr sr esq phd a.m am p.m pm ed eds ave blvd rd hwy ln
    dept univ assn intl natl govt mfg misc ibid cont orig incl excl esp resp min max avg
    """.split()
)

# Street suffixes (in SENTENCE_FINAL): before a compass point they continue ("Ave. NW").
STREETS: frozenset[str] = frozenset("ave blvd rd hwy ln".split())

COMPASS: frozenset[str] = frozenset("N S E W NE NW SE SW".split())

# Time-of-day abbreviations: before a time-zone word they continue ("5 p.m. EST").
TIME_OF_DAY: frozenset[str] = frozenset({"a.m", "p.m", "am", "pm"})

TIME_ZONES: frozenset[str] = frozenset(
    """
    EST EDT CST CDT MST MDT PST PDT AKST AKDT HST UTC GMT BST CET CEST EET EEST IST JST KST AEST AEDT
    ET CT MT PT
    """.split()
)

# Capitalised words that almost always begin a sentence and almost never continue a name. After an
# initialism ("U.S.") or an initial ("J."), one of these means a new sentence ("in the U.S. The...").
SENTENCE_STARTERS: frozenset[str] = frozenset(
    """
    The A An This That These Those It Its He She They We I You His Her Their Our My Your There Here
    But And Or So Yet Nor However Therefore Thus Then Now Also In On At For From To With By Of As If
    When While Where What Why How Who Which Whose After Before Although Though Because Since Once
    Until Unless Many Most Some Several All Both Each Every Few Other Another Such No Not Only Even
    Still Meanwhile Today Yesterday Tomorrow Later Earlier Finally First Second Third Next Last Instead
    Indeed Moreover Furthermore Besides Otherwise Nevertheless Nonetheless Additionally Overall Please
    Thanks Thank Yes Is Are Was Were Do Does Did Can Could Would Should Shall Might Must Let Let's
    Despite During Under Over Between Among Without Within Just Perhaps Maybe Well Oh Sadly Luckily
    Unfortunately Fortunately Hence Accordingly Similarly Likewise Consequently Regardless Today's
    Have Has Had
    """.split()
)
