"""What the suite can see of a container it started itself: its CPU time, whether it has exited, and a
SIGTERM to send it: a local process (/proc), or a Docker container (the engine's API). A target the
suite did not start (url, sagemaker) has nothing here."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bidi_tts_conformance.targets import DockerTarget, Target

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


class Watched(Protocol):
    @property
    def fine_cpu_meter(self) -> bool: ...  # CPU time read at once, to the tick (a local process), not sampled

    def cpu_seconds(self) -> float | None: ...  # None once it is gone
    def has_exited(self) -> bool: ...
    def terminate(self) -> None: ...  # SIGTERM, as SageMaker stops a container
    def sigterm_reach(self) -> str | None: ...  # what SIGTERM meets in the process signalled (None: unknown)


#: Bit of SIGTERM (15) in /proc/PID/status's signal masks.
_SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def sigterm_disposition(status: str, *, pid_one: bool) -> str | None:
    """What a process does with SIGTERM, from its /proc/PID/status (SigCgt, SigIgn, SigBlk); None when
    those lines are missing. As PID 1 of a PID namespace, a signal it has no handler for is dropped by the
    kernel: SIGTERM's default action (exit) never happens to it."""
    masks = {k: int(v, 16) for k, _, v in (line.partition(":\t") for line in status.splitlines())
             if k in ("SigCgt", "SigIgn", "SigBlk") and v}
    if len(masks) < 3:
        return None
    if masks["SigIgn"] & _SIGTERM_BIT:
        return "ignores SIGTERM (SIG_IGN)"
    if masks["SigCgt"] & _SIGTERM_BIT:
        return "catches SIGTERM (a handler is installed)" + (" but blocks it" if masks["SigBlk"] & _SIGTERM_BIT else "")
    if pid_one:
        return ("has no SIGTERM handler, and as PID 1 the kernel drops a signal it has no handler for: SIGTERM "
                "never reaches the server it started (exec the server, or run an init such as tini)")
    return "has no SIGTERM handler (its default action, exit, applies)"


@dataclass(frozen=True, slots=True)
class LocalProcess:
    pid: int
    fine_cpu_meter: bool = True

    def _stat(self) -> list[str] | None:
        try:
            raw = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return None
        return raw[raw.rindex(")") + 2:].split()  # after "pid (comm) ": the state first

    def cpu_seconds(self) -> float | None:
        """User plus system CPU time of the process (all its threads)."""
        fields = self._stat()
        return None if fields is None else (int(fields[11]) + int(fields[12])) * _TICK_S

    def has_exited(self) -> bool:
        """Gone, or dead with every thread gone. A zombie leader ("Z") alone is not enough: a process
        whose main thread ended while others still run shows it, and may still be serving."""
        fields = self._stat()
        if fields is None or fields[0] == "X":
            return True
        return fields[0] == "Z" and not self._live_threads()

    def _live_threads(self) -> bool:
        try:
            tasks = list(Path(f"/proc/{self.pid}/task").iterdir())
        except OSError:
            return False
        for task in tasks:
            try:
                raw = (task / "stat").read_text()
            except OSError:
                continue
            if raw[raw.rindex(")") + 2:][:1] not in ("Z", "X"):
                return True
        return False

    def terminate(self) -> None:
        os.kill(self.pid, signal.SIGTERM)

    def sigterm_reach(self) -> str | None:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return None
        said = sigterm_disposition(status, pid_one=False)
        return None if said is None else f"the process (pid {self.pid}) {said}"


@dataclass(frozen=True, slots=True)
class DockerContainer:
    container: Any  # docker-py's Container
    fine_cpu_meter: bool = False

    def cpu_seconds(self) -> float | None:
        if self.has_exited():
            return None
        try:
            stats = self.container.stats(stream=False, one_shot=True)  # no second sample: at once
        except TypeError:  # an older docker-py
            stats = self.container.stats(stream=False)
        return float(stats["cpu_stats"]["cpu_usage"]["total_usage"]) / 1e9

    def has_exited(self) -> bool:
        try:
            self.container.reload()
        except Exception:  # removed: gone
            return True
        return self.container.status not in ("running", "created", "restarting")

    def terminate(self) -> None:
        self.container.kill(signal="SIGTERM")

    def sigterm_reach(self) -> str | None:
        """PID 1 of the container (the image's entrypoint, where SIGTERM goes) and what it does with SIGTERM."""
        try:
            cmdline = self.container.exec_run(["cat", "/proc/1/cmdline"]).output.decode("utf-8", "replace")
            status = self.container.exec_run(["cat", "/proc/1/status"]).output.decode("utf-8", "replace")
        except Exception:  # gone, or no `cat` in the image: say nothing rather than guess
            return None
        said = sigterm_disposition(status, pid_one=True)
        shown = " ".join(part for part in cmdline.split("\0") if part)
        return None if said is None or not shown else f"PID 1 of the container is `{shown}`, which {said}"


def watched(target: Target) -> Watched | None:
    """The container the suite started, to watch and signal; None when it did not start one."""
    pid = getattr(target, "pid", None)  # ProcessTarget's, and the tests' own process targets'
    if target.kind == "process" and isinstance(pid, int):
        return LocalProcess(pid)
    running = target.running_container if isinstance(target, DockerTarget) else None
    return DockerContainer(running) if running is not None else None


def why_not_watched(target: Target) -> str:
    return f"the suite did not start this container (a {target.kind} target): it has nothing to watch or signal"
