"""The container a tool measures: the one at a given URL, or the reference container started for the run.

The benchmarks and scripts that take ``--container-url`` start the reference container as a local
process when none is given, print its start-up lines under their own label, and stop it when done.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bidi_tts_conformance.targets import ProcessTarget


@contextmanager
def container_at(url: str | None, label: str, *, log_path: str | None = None,
                 ) -> Iterator[tuple[str, ProcessTarget | None]]:
    """(url, None) for a given `url`; else the reference container's URL and its process, stopped on exit."""
    if url is not None:
        yield url, None
        return
    target = ProcessTarget(log_path=log_path)
    target.start(lambda line: print(f"{label}: {line}", flush=True))
    assert target.base_url is not None  # set by start()
    try:
        yield target.base_url, target
    finally:
        target.stop()
