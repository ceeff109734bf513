"""What `/ping` answered from the moment the suite started a container until it was ready (SM-PING).

Only a target the suite starts itself (a local process, a Docker container, a container served in
the suite's own process) has a loading window to watch: the polling that waits for `/ping` 200 adds
every answer here, and `health.ping.loading.1` judges the record (503 while loading, then 200).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class PingAnswer:
    """One poll: seconds since the container was started, and the HTTP status (None: no answer)."""

    at_s: float
    status: int | None


@dataclass(slots=True)
class PingLog:
    """Every `/ping` answer from the container's start until the first 200 (bounded)."""

    started_at: float = field(default_factory=time.monotonic)
    answers: list[PingAnswer] = field(default_factory=list)
    limit: int = 10_000  # 8 minutes at 4 polls a second, with room to spare

    def add(self, status: int | None) -> None:
        if len(self.answers) < self.limit:
            self.answers.append(PingAnswer(time.monotonic() - self.started_at, status))

    @property
    def ready_at_s(self) -> float | None:
        """When /ping first answered 200 (None: never)."""
        return next((a.at_s for a in self.answers if a.status == 200), None)

    def while_loading(self) -> list[PingAnswer]:
        """The answers (an HTTP status, not silence) before the first 200: the loading window as seen."""
        seen = []
        for answer in self.answers:
            if answer.status == 200:
                break
            if answer.status is not None:
                seen.append(answer)
        return seen
