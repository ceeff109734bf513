"""The containers under test: one reference container per configuration, each a child process.

Started with the pinned command (:class:`bidi_tts.local_container.LocalContainer`) on its own port,
with its log and its scheduler's stats file (``SCHEDULER_STATS_FILE``) in the log folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from bidi_tts.deadline import Deadline
from bidi_tts.local_container import LocalContainer
from bidi_tts_loadtest.core.container_config import Config


class Container:
    """One reference container in a child process, stopped on exit."""

    def __init__(self, config: Config, port: int, log_dir: Path) -> None:
        self.config = config
        self.name = config.name
        slug = "".join(c if c.isalnum() else "-" for c in config.name)
        self.stats_file = log_dir / f"scheduler-{slug}.json"
        self.stats_file.unlink(missing_ok=True)
        self.process = LocalContainer(port, [*config.args(), "--log-level", "warning"],
                                      log=log_dir / f"container-{slug}.log",
                                      env={"SCHEDULER_STATS_FILE": str(self.stats_file)})
        self.url = self.process.url

    def read_sched(self) -> dict[str, float]:
        """The scheduler's running totals (written after its last job of a burst); {} before any."""
        try:
            return dict(json.loads(self.stats_file.read_text()))
        except (OSError, ValueError):
            return {}

    def wait_ready(self, deadline: Deadline) -> None:
        waited = self.process.wait_ready(deadline.remaining(), interval=1.0)
        if waited.outcome == "exited":
            raise RuntimeError(f"container {self.name} exited with {self.process.returncode} (see its log)")
        if waited.outcome == "timeout":
            raise RuntimeError(f"container {self.name} not ready in time")

    def stop(self) -> None:
        self.process.stop()
