"""English G2P in worker processes, off the model's process (the torch route's ``--g2p-processes``).

misaki and spaCy cost about 10 ms plus 0.3 ms a character per unit (measured on the H200's host,
``../shared/measurements/h200-2026-12-04``). In threads of the model's process that work holds the
interpreter lock the serving loop needs to launch its kernels; in processes it does not. Each
process builds its own :class:`~reference_container.g2p.EnglishG2P` once (spawned, not forked: the
parent has torch and, on a GPU, CUDA initialised) and answers phoneme chunks of at most 510 symbols,
exactly as the in-process G2P does.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

_g2p: Any = None


def _start(british: bool) -> None:
    global _g2p
    from reference_container.g2p import EnglishG2P

    _g2p = EnglishG2P(british=british)


def _phonemes(text: str) -> list[str]:
    assert _g2p is not None, "G2P worker used before its initializer ran"
    return list(_g2p.phonemes(text))


class G2PPool:
    """`processes` G2P workers; :meth:`phonemes` blocks the calling thread (not the interpreter)."""

    def __init__(self, processes: int, *, british: bool = False) -> None:
        if processes < 1:
            raise ValueError("processes must be >= 1")
        self.processes = processes
        self._pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start, initargs=(british,))
        # Start every worker now, at load time (each builds misaki's G2P), not at the first messages.
        list(self._pool.map(_phonemes, ["Hi."] * processes))

    def phonemes(self, text: str) -> list[str]:
        """Phoneme strings for `text`, each at most 510 symbols, split at natural boundaries."""
        return self._pool.submit(_phonemes, text).result()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
