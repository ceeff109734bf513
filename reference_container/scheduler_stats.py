"""The scheduler's counts, written to a file for ``loadtest.capacity`` without blocking the event loop.

A file write can stall: on ext4, a file renamed over another (the atomic replace a reader needs) or
truncated has its data flushed first, and on a machine where other processes write, that took up to
0.63 s (measured on the 2-core development machine, 2026-12-01; p50 0.9 ms). The scheduler used to
write on the event loop, at most twice a second and after the last unit of every burst, so a slow
write froze every session of the container at once: messages queued unread in the sockets, then
arrived together and queued for the workers (issue 20: round-robin at 16 timed sessions, 49% of
picks contested and p50 751 ms with the device at most 26% busy). :class:`StatsWriter` takes the
snapshot on the loop (a dict, cheap) and writes it on its own thread; a newer snapshot replaces one
not yet written, so the file is at most one write behind and the loop never waits for the disk.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

log = logging.getLogger(__name__)


def write_json_atomic(path: str, data: dict[str, Any]) -> None:
    """`data` as JSON in `path`, replaced atomically (a reader never sees half a file)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


class StatsWriter:
    """Writes the latest submitted snapshot to `path` on a daemon thread; see the module docstring."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.failed = False
        self._cond = threading.Condition()
        self._pending: dict[str, Any] | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="scheduler-stats", daemon=True)
        self._thread.start()

    def submit(self, snapshot: dict[str, Any]) -> None:
        """Queue `snapshot` for writing (replacing one not yet written); returns at once."""
        with self._cond:
            self._pending = snapshot
            self._cond.notify()

    def close(self, timeout_s: float = 5.0) -> None:
        """Write what is pending, then stop the thread (waits at most `timeout_s`)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                snapshot, self._pending = self._pending, None
            if snapshot is None:  # closed, nothing left to write
                return
            try:
                write_json_atomic(self.path, snapshot)
            except OSError:
                log.warning("event=scheduler_stats_unwritable path=%s", self.path)
                self.failed = True
                return
