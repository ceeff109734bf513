"""A container the bench starts itself as a child process: one of the AWS sample's four (through
bench/sample/sample_containers.py) or the reference (the pinned `python -m reference_container` command).

A suite target of kind "process" with the serving process's `pid`, so the cases that watch or signal
the container (stop.client.1, stop.sigterm.1; bidi_tts_conformance.process_probe) judge it, and with
the /ping answers of its loading window (health.ping.loading.1). sample_containers.py runs uvicorn in
its own main thread, so the child's pid is the server's. `stop()` sends SIGTERM, then SIGKILL after a
bound, and says how the process ended (`ended`): a container that ignores SIGTERM is shown as such.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from bench.sample import sample_containers
from bench.sample.standins import onnx_model, prepare
from bidi_tts.exit_codes import RUN_FAILED, USAGE
from bidi_tts.local_container import free_port, start_command
from bidi_tts_conformance.ping_log import PingLog
from bidi_tts_conformance.process_probe import LocalProcess
from bidi_tts_conformance.targets import LocalProcessTarget, Progress

ROOT = Path(__file__).resolve().parents[2]
ZOMBIE_WAIT_S = 5.0
STOP_GRACE_S = 15.0  # SIGTERM, then SIGKILL this long after (SageMaker waits 30 s; the bench need not)


class StartError(RuntimeError):
    """The container cannot be started (one line for the user) and the exit code to end with."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def usable_port(port: int | None) -> int:
    """`port` when it is a free TCP port on 127.0.0.1, a free one when None; StartError (USAGE) otherwise."""
    if port is None:
        return free_port()
    if not 0 < port < 65536:
        raise StartError(f"--port {port} is not a TCP port", USAGE)
    if not sample_containers.port_is_free(port):
        raise StartError(f"127.0.0.1:{port} is already in use", USAGE)
    return port


def sample_command(sample_dir: Path, container: str, port: int) -> list[str]:
    """sample_containers.py's command line for `container`; StartError (USAGE) when its file is missing."""
    if container not in prepare.PROTOCOL_FILES:
        raise StartError(f"--container {container!r} is not one of {', '.join(sorted(prepare.PROTOCOL_FILES))}",
                         USAGE)
    if not sample_dir.is_dir():
        raise StartError(f"--sample-dir {sample_dir} is not a folder (fetch aws-samples/"
                         "sample-kokoro-tts-for-ai-agents there)", USAGE)
    if sample_containers.container_file(sample_dir, container) is None:
        raise StartError(f"no {container}/{prepare.PROTOCOL_FILES[container]} under {sample_dir}", USAGE)
    return [sys.executable, str(ROOT / "bench" / "sample_containers.py"), "--sample-dir", str(sample_dir),
            "--container", container, "--port", str(port)]


def reference_command(port: int) -> list[str]:
    return start_command(port)


def child_env() -> dict[str, str]:
    """This environment, with the repository importable and the shared voices named (a worktree has no
    ../shared of its own, where the reference would look)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    voices = onnx_model.voices_dir()
    if voices is not None:
        env.setdefault("KOKORO_VOICES_DIR", str(voices))
    return env


@dataclass
class ChildProcessTarget(LocalProcessTarget[subprocess.Popen[bytes]]):
    """A container started as a child process on 127.0.0.1:`port`, its output in `log_path`."""

    command: list[str] = field(default_factory=list)
    port: int = 0
    log_path: Path | None = None
    stop_grace_s: float = STOP_GRACE_S
    ended: str = "not started"  # how the process ended, once stop() has run
    _log: IO[bytes] | None = field(default=None, repr=False)

    def start(self, progress: Progress = lambda _: None) -> None:
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._log = self.log_path.open("wb") if self.log_path is not None else None
        self.ping_log = PingLog()  # before the start: the loading window counts from here
        progress(f"starting {' '.join(self.command)}")
        try:
            proc = self._proc = subprocess.Popen(self.command, stdout=self._log or subprocess.DEVNULL,
                                                 stderr=subprocess.STDOUT, env=child_env(), cwd=ROOT)
        except OSError as exc:
            self._close_log()
            raise StartError(f"cannot start {self.command[0]}: {exc}", RUN_FAILED) from None
        try:
            self._await_ready(lambda: proc.poll() is None, progress)
        except RuntimeError as exc:  # stopped already
            raise StartError(f"{exc} (its output: {self.log_path or 'not kept'})", RUN_FAILED) from None

    def stop(self) -> None:
        """SIGTERM, SIGKILL after `stop_grace_s`; records how it ended in `ended`. Safe to call twice."""
        if (proc := self._let_go()) is not None:
            self.ended = _end(proc, self.stop_grace_s)
        self._close_log()

    def _close_log(self) -> None:
        log, self._log = self._log, None
        if log is not None:
            log.close()


def _end(proc: subprocess.Popen[bytes], grace_s: float) -> str:
    code = proc.poll()
    if code is None and LocalProcess(proc.pid).has_exited():
        # Its main thread is a zombie: the process is dying (a large one takes a moment to tear down
        # its other threads and memory) and cannot be reaped until it is gone.
        try:
            code = proc.wait(timeout=ZOMBIE_WAIT_S)
        except subprocess.TimeoutExpired:
            pass  # not dying after all: stop it as any other
    if code is not None:
        return f"had already {_how(code)}"
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    try:
        code = proc.wait(timeout=grace_s)
        return f"{_how(code)} {time.monotonic() - sent:.1f} s after SIGTERM"
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
        return f"still running {grace_s:g} s after SIGTERM: killed with SIGKILL"


def _how(code: int) -> str:
    return f"ended by signal {-code}" if code < 0 else f"exited (code {code})"
