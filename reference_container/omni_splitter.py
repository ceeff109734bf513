"""The units one vLLM-Omni flush is spoken in (its `split_granularity`): the whole flush, each sentence,
or each clause, released as soon as the text that ends them arrives."""

from __future__ import annotations

import re

from bidi_tts.chunker import IncrementalSentenceChunker

_CLAUSE_END = re.compile(r"(?<=[,;:])\s+")


class UnitSplitter:
    """`feed` returns the units that are complete; `flush` (input.done) the rest."""

    def __init__(self, granularity: str) -> None:
        self.granularity = granularity
        self._chunker = IncrementalSentenceChunker() if granularity != "none" else None
        self._whole: list[str] = []
        self.pending_chars = 0  # text fed and not yet released: bounded by the container's text limit

    def feed(self, text: str) -> list[str]:
        self.pending_chars += len(text)
        if self._chunker is None:
            self._whole.append(text)
            return []
        return self._released(self._chunker.feed(text))

    def flush(self) -> list[str]:
        if self._chunker is None:
            whole, self._whole, self.pending_chars = "".join(self._whole).strip(), [], 0
            return [whole] if whole else []
        rest = self._chunker.flush()
        self.pending_chars = 0
        return self._released([rest] if rest else [])

    def _released(self, sentences: list[str]) -> list[str]:
        units: list[str] = []
        for sentence in sentences:
            self.pending_chars = max(0, self.pending_chars - len(sentence))
            parts = _CLAUSE_END.split(sentence) if self.granularity == "clause" else [sentence]
            units += [p.strip() for p in parts if p.strip()]
        return units
