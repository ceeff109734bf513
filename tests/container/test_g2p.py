"""EnglishG2P is kokoro's English G2P and splitter without torch: the same phoneme chunks as
`KPipeline` on a corpus, and a start that imports neither torch, transformers nor kokoro."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bidi_tts_conformance.cases.content import CONCURRENT, INTELLIGIBLE, ORDER, SESSION
from bidi_tts_conformance.cases.isolation import HOL_LONG

REPO = Path(__file__).resolve().parents[2]

CORPUS = [
    "Hello world.", "Hi.", "Okay.", "A.", "", "   ", "Xyzzyplugh frobnicates the quux!",
    "I read the book yesterday; I will read it again tomorrow (if I can).",
    "It costs $3.50, or 12% more than 1,000 yen on 3/4/2025 at 10:30 p.m.",
    "“Quoted,” she said — and left… Didn't she?",
    HOL_LONG, *INTELLIGIBLE, *ORDER, *SESSION, *CONCURRENT,
    "This is a rather long sentence, repeated. " * 40,  # several chunks, cut at sentence ends
    "no stops at all just words running on and on " * 40,  # cut where nothing ends a clause
    "one, two; three: four, five, six, seven, eight, nine, ten, " * 30,  # clause marks only
]
GIANT_WORD = ("Supercalifragilisticexpialidocious" * 30) + "."  # one word longer than the context




@pytest.fixture(scope="module")
def both() -> tuple[object, object]:
    from reference_container.g2p import EnglishG2P, kokoro_pipeline

    return EnglishG2P(), kokoro_pipeline("a", model=False)


@pytest.mark.parametrize("n", range(len(CORPUS)))
def test_same_chunks_as_kokoro_pipeline(both: tuple[object, object], n: int) -> None:
    from reference_container.g2p import MAX_PHONEMES

    ours, pipeline = both
    text = CORPUS[n]
    theirs = [r.phonemes.strip() for r in pipeline(text, split_pattern=None) if r.phonemes]  # type: ignore[operator]
    got = list(ours.phonemes(text))  # type: ignore[attr-defined]
    assert all(0 < len(p) <= MAX_PHONEMES for p in got)
    assert got == theirs


def test_a_word_longer_than_the_context_is_kept_whole(both: tuple[object, object]) -> None:
    """KPipeline cuts such a chunk at 510 symbols and drops the rest; ours splits it and keeps it."""
    from reference_container.g2p import MAX_PHONEMES

    ours, pipeline = both
    theirs = [r.phonemes.strip() for r in pipeline(GIANT_WORD, split_pattern=None) if r.phonemes]  # type: ignore[operator]
    got = list(ours.phonemes(GIANT_WORD))  # type: ignore[attr-defined]
    assert len(theirs[0]) == MAX_PHONEMES and got[0] == theirs[0] and got[-1] == theirs[-1]
    assert all(0 < len(p) <= MAX_PHONEMES for p in got)
    assert sum(map(len, got)) > sum(map(len, theirs)) + MAX_PHONEMES


def test_built_without_torch_transformers_or_kokoro() -> None:
    code = (
        "import sys\n"
        "from reference_container.g2p import set_offline_env, EnglishG2P; set_offline_env()\n"
        "print(list(EnglishG2P().phonemes('Hello world.')))\n"
        "heavy = ('torch', 'transformers', 'kokoro', 'spacy_curated_transformers')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["['həlˈO wˈɜɹld.']", "[]"]
