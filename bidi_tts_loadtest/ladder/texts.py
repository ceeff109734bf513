"""The request ladder's texts: short sentences, one a line (``--texts FILE``, or the shipped ``short_texts.txt``)."""

from __future__ import annotations

from pathlib import Path

SHORT_TEXTS_PATH = Path(__file__).with_name("short_texts.txt")


class TextsError(ValueError):
    """A texts file that cannot be used; the message is one line."""


def load_texts(path: Path = SHORT_TEXTS_PATH) -> tuple[str, ...]:
    """The non-empty, non-comment lines of `path`, whitespace-normalized."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TextsError(f"--texts {str(path)!r}: cannot read it ({type(exc).__name__})") from None
    texts = tuple(" ".join(line.split()) for line in raw.splitlines()
                  if line.strip() and not line.lstrip().startswith("#"))
    if not texts:
        raise TextsError(f"--texts {str(path)!r}: no texts in it (one a line)")
    return texts


def mean_chars(texts: tuple[str, ...]) -> float:
    return sum(len(t) for t in texts) / len(texts)
