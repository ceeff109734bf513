"""Stopping within SageMaker's 30 s: on SIGTERM, drain the open sessions, then exit 0.

SageMaker stops a container with SIGTERM and sends SIGKILL 30 s later. Left to itself, uvicorn closes
every WebSocket at once with 1012, cutting the message in progress, and re-raises SIGTERM after its
shutdown (the process dies of the signal). Instead the server stops listening, then each session finishes
the message it is synthesizing and closes with 1001 (going away; messages queued behind it are not
started) and each POST stream ends; at the drain deadline what still runs is stopped (its
synthesis_complete says cancelled) and closed with 1001 too; then uvicorn's own shutdown runs and the
process exits 0.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from types import FrameType

import uvicorn

from reference_container.drain import Drain

GRACEFUL_SHUTDOWN_S = 3  # uvicorn's own wait for what is left after the drain (both within SageMaker's 30 s)


class DrainingServer(uvicorn.Server):
    """uvicorn's server with SageMaker's stop: SIGTERM (or Ctrl+C) drains, a second one cuts the drain
    short; after SIGTERM the process exits 0."""

    def __init__(self, config: uvicorn.Config, drain_of: Callable[[], Drain | None], drain_s: float) -> None:
        super().__init__(config)
        self.drain_of = drain_of
        self.drain_s = drain_s

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig != signal.SIGTERM:
            super().handle_exit(sig, frame)
        elif self.should_exit:
            self.force_exit = True
        else:
            # Not recorded for uvicorn to re-raise after the shutdown: a drained stop is a clean exit.
            self.should_exit = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        drain = self.drain_of()
        if drain is not None and not self.force_exit:
            await drain.run(self.drain_s, give_up=lambda: self.force_exit)
        await super().shutdown(sockets)
