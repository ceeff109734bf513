"""The reference container as a child process: the pinned start command, ready when ``/ping`` says 200.

``python -m reference_container --host 127.0.0.1 --port PORT`` (CONTRACT.md, pinned project surface)
is how this project starts the container without Docker; the suite's process target and the capacity
sweep both start it here. It runs in its own process with this interpreter, so nothing of
``reference_container`` is imported (that package needs the ``container`` extra).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from bidi_tts.probe import Waited, wait_for_ping

__all__ = ["LocalContainer", "free_port", "start_command"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_command(port: int, *args: str, host: str = "127.0.0.1") -> list[str]:
    """The pinned start command on ``host:port``, with more options (``--backend``, ...) after it."""
    return [sys.executable, "-m", "reference_container", "--host", host, "--port", str(port), *args]


class LocalContainer:
    """One reference container process; :meth:`stop` ends it (and closes its log)."""

    def __init__(self, port: int | None = None, args: Sequence[str] = (), *, log: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.port = free_port() if port is None else port
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = start_command(self.port, *args)
        self._log: IO[bytes] | None = log.open("wb") if log is not None else None
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            self.command, stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
            env=None if env is None else {**os.environ, **env})
        self.pid = self.proc.pid
        self.returncode: int | None = None

    def alive(self) -> bool:
        """Whether the process still runs."""
        if self.proc is None:
            return False
        self.returncode = self.proc.poll()
        return self.returncode is None

    def wait_ready(self, timeout: float, *, note: Callable[[int | None, float], None] | None = None,
                   interval: float = 0.25) -> Waited:
        """Wait until ``/ping`` answers 200, the process exits, or ``timeout`` seconds pass (:attr:`Waited.outcome`)."""
        return wait_for_ping(self.url, timeout, alive=self.alive, note=note, interval=interval)

    def stop(self, grace: float = 15.0) -> None:
        """Terminate the process, kill it after ``grace`` seconds; safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if proc is not None:
            self.returncode = proc.returncode
        if self._log is not None:
            self._log.close()
            self._log = None
