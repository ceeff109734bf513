"""The corpus of agent-style answers a simulated voice agent speaks (loadtest/answers.txt)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

ANSWERS_PATH = Path(__file__).with_name("answers.txt")


def parse_answers(text: str) -> list[str]:
    """Paragraphs of `text` (blank-line separated, `#` comment lines dropped), whitespace-normalized."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    paragraphs = "\n".join(lines).split("\n\n")
    return [" ".join(p.split()) for p in paragraphs if p.strip()]


@cache
def load_answers(path: Path = ANSWERS_PATH) -> tuple[str, ...]:
    """The answers in `path` (the shipped corpus by default)."""
    answers = tuple(parse_answers(path.read_text(encoding="utf-8")))
    if not answers:
        raise ValueError(f"{path}: no answers")
    return answers
