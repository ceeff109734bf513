"""What the suite can see of a container process it started itself: its CPU time, whether it has exited,
and a SIGTERM to send it. A target the suite did not start (url, sagemaker) has no process here."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from bidi_tts_conformance.targets import Target

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def process_of(target: Target) -> int | None:
    """The container's process id when the suite started it as a local process (not docker: its
    process is the engine's, behind a namespace)."""
    pid = getattr(target, "pid", None)
    return pid if isinstance(pid, int) and target.kind == "process" else None


def why_no_process(target: Target) -> str:
    if target.kind == "docker":
        return "a docker target: the suite does not read or signal the container's process inside the engine"
    return f"the suite did not start this container (a {target.kind} target): it has no process to watch or signal"


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()  # after "pid (comm) ": state is field 3 of the man page


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of the process (all its threads), None once it is gone."""
    fields = _stat(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) * _TICK_S


def has_exited(pid: int) -> bool:
    fields = _stat(pid)
    return fields is None or fields[0] in ("Z", "X")


def terminate(pid: int) -> None:
    os.kill(pid, signal.SIGTERM)
