"""Incremental sentence chunker (placeholder being replaced by the full implementation)."""

from __future__ import annotations

import re

_SPLIT = re.compile(r"(?<=[.!?])\s+")


class IncrementalSentenceChunker:
    def __init__(self, max_chars: int = 400) -> None:
        self._buffer = ""
        self.max_chars = max_chars

    def feed(self, fragment: str) -> list[str]:
        self._buffer += fragment
        parts = _SPLIT.split(self._buffer)
        self._buffer = parts.pop()
        return [p.strip() for p in parts if p.strip()]

    def flush(self) -> str | None:
        rest, self._buffer = self._buffer.strip(), ""
        return rest or None


def split_sentences(text: str) -> list[str]:
    chunker = IncrementalSentenceChunker()
    out = chunker.feed(text)
    tail = chunker.flush()
    return out + ([tail] if tail else [])
