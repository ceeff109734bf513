"""bench/sample/sample_target.py and bench_sample.py's started containers: bad input is one line and exit 4; the
target hands the suite the serving process's pid, and stop() ends a process that ignores SIGTERM.

The lifecycle tests start a few-line HTTP server (`_PING_SERVER`), not a container: they judge the
target's start, pid and stop, which do not depend on what serves. Starting a real sample container
needs the fetched sample and the model: the last test, run only with BENCH_SAMPLE_DIR set."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.sample import sample_target
from bidi_tts.exit_codes import RUN_FAILED, USAGE
from bidi_tts_conformance.process_probe import LocalProcess, watched

ROOT = Path(__file__).resolve().parents[2]

# Answers GET /ping 200; with "ignore" as its second argument it ignores SIGTERM.
_PING_SERVER = """
import http.server, signal, sys
if sys.argv[2:] == ["ignore"]:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
class Ping(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/ping" else 404); self.end_headers()
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Ping).serve_forever()
"""


def _bench_sample(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "bench/sample/bench_sample.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def _one_line_exit_4(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert done.returncode == USAGE, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert says in done.stderr


def test_a_sample_dir_that_is_no_folder_is_one_line_and_exit_4() -> None:
    _one_line_exit_4(_bench_sample("--sample-dir", "/nonexistent/sample", "--container", "kokoro-cpu"),
                     "is not a folder")


def test_a_sample_dir_without_the_container_file_is_one_line_and_exit_4(tmp_path: Path) -> None:
    _one_line_exit_4(_bench_sample("--sample-dir", str(tmp_path), "--container", "vllm"),
                     "no vllm/streaming_proxy.py under")


def test_an_unknown_container_and_option_mixes_are_usage_errors(tmp_path: Path) -> None:
    _one_line_exit_4(_bench_sample("--sample-dir", str(tmp_path), "--container", "nope"), "is not one of")
    _one_line_exit_4(_bench_sample("--reference", "--container", "kokoro"), "--reference takes no")
    _one_line_exit_4(_bench_sample("--container", "kokoro"), "go together")
    _one_line_exit_4(_bench_sample("--url", "http://127.0.0.1:1", "--reference"), "give one of")
    _one_line_exit_4(_bench_sample("--reference", "--cases", "nope.*"), "selects no case")


def test_a_busy_port_is_one_line_and_exit_4() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        _one_line_exit_4(_bench_sample("--reference", "--port", str(port)), f"127.0.0.1:{port} is already in use")


def _ping_target(tmp_path: Path, *extra: str, grace: float = 5.0) -> sample_target.ChildProcessTarget:
    port = sample_target.usable_port(None)
    return sample_target.ChildProcessTarget(command=[sys.executable, "-c", _PING_SERVER, str(port), *extra],
                                            port=port, log_path=tmp_path / "child.log", ready_timeout=20,
                                            stop_grace_s=grace)


def test_the_target_is_a_process_target_with_the_serving_pid_and_stops_on_sigterm(tmp_path: Path) -> None:
    target = _ping_target(tmp_path)
    target.start()
    try:
        assert target.kind == "process" and target.base_url == f"http://127.0.0.1:{target.port}"
        assert target.ping_log is not None and target.ping_log.ready_at_s is not None
        box = watched(target)
        assert isinstance(box, LocalProcess) and box.pid == target.pid
        assert not box.has_exited() and box.cpu_seconds() is not None
        pid = target.pid
    finally:
        target.stop()
    assert target.pid is None and "after SIGTERM" in target.ended and "SIGKILL" not in target.ended
    assert pid is not None and LocalProcess(pid).has_exited()
    target.stop()  # twice is harmless


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    target = _ping_target(tmp_path, "ignore", grace=0.5)
    target.start()
    pid = target.pid
    target.stop()
    assert "killed with SIGKILL" in target.ended
    assert pid is not None and LocalProcess(pid).has_exited()


def test_a_process_killed_before_the_stop_is_said_to_have_ended_already(tmp_path: Path) -> None:
    target = _ping_target(tmp_path)
    target.start()
    assert target.pid is not None
    os.kill(target.pid, signal.SIGKILL)
    while not LocalProcess(target.pid).has_exited():
        time.sleep(0.01)
    target.stop()
    assert target.ended == "had already ended by signal 9"


# Serves /ping from a thread, then its main thread calls pthread_exit: /proc shows the process as a
# zombie ("Z") while it still serves, as when a big process's main thread is gone but it is not.
_ZOMBIE_LEADER = _PING_SERVER.replace("http.server.HTTPServer(", "server = http.server.HTTPServer(").replace(
    ".serve_forever()", "\nimport threading, time, ctypes\nthreading.Thread(target=server.serve_forever).start()"
    "\ntime.sleep(1.0)\nctypes.CDLL(None).pthread_exit(None)")


def test_a_process_whose_main_thread_is_a_zombie_but_that_still_runs_is_stopped(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sample_target, "ZOMBIE_WAIT_S", 0.5)
    port = sample_target.usable_port(None)
    target = sample_target.ChildProcessTarget(command=[sys.executable, "-c", _ZOMBIE_LEADER, str(port)], port=port,
                                              log_path=tmp_path / "z.log", ready_timeout=20, stop_grace_s=5)
    target.start()
    assert target.pid is not None
    leader = Path(f"/proc/{target.pid}/stat")
    for _ in range(300):
        if leader.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.01)
    assert leader.read_text().rsplit(")", 1)[1].split()[0] == "Z"  # what /proc says of the leader
    assert not LocalProcess(target.pid).has_exited()  # its server thread still runs: not exited
    target.stop()
    assert "after SIGTERM" in target.ended and "already" not in target.ended


def test_a_process_that_exits_before_ready_is_a_start_error_naming_its_log(tmp_path: Path) -> None:
    target = sample_target.ChildProcessTarget(command=[sys.executable, "-c", "print('no model'); raise SystemExit(3)"],
                                              port=sample_target.usable_port(None), log_path=tmp_path / "c.log")
    with pytest.raises(sample_target.StartError) as raised:
        target.start()
    assert raised.value.exit_code == RUN_FAILED and str(tmp_path / "c.log") in str(raised.value)
    assert "exited before /ping answered 200" in str(raised.value)
    assert "no model" in (tmp_path / "c.log").read_text() and target.pid is None


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BENCH_SAMPLE_DIR"), reason="set BENCH_SAMPLE_DIR to the fetched AWS sample")
def test_the_kokoro_cpu_container_starts_and_its_pid_is_the_server(tmp_path: Path) -> None:
    port = sample_target.usable_port(None)
    command = sample_target.sample_command(Path(os.environ["BENCH_SAMPLE_DIR"]), "kokoro-cpu", port)
    target = sample_target.ChildProcessTarget(command=command, port=port, log_path=tmp_path / "k.log",
                                              ready_timeout=300)
    target.start()
    try:
        assert target.pid is not None
        assert _listening_inode(port) in _socket_inodes(target.pid)  # the child itself serves (no wrapper)
    finally:
        target.stop()
    assert "after SIGTERM" in target.ended or "SIGKILL" in target.ended


def _listening_inode(port: int) -> str:
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":  # 0A: LISTEN
            return fields[9]
    raise AssertionError(f"nothing listens on {port}")


def _socket_inodes(pid: int) -> set[str]:
    links = (os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}
