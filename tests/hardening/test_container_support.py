"""Shared tools of the hardening tests against the REAL reference container (no tests here).

- `container_fixture(env)`: a module-scoped fixture that starts `python -m reference_container --host
  127.0.0.1 --port PORT` once per module through `conformance.targets.ProcessTarget`, with extra
  environment settings (the container reads e.g. `MAX_QUEUE` from the environment);
- `/proc` probes of the container process: RSS, open descriptors, CPU seconds, listening sockets;
- `RawWsClient`: a WebSocket client on a plain blocking socket (websockets' sans-I/O protocol), for
  clients that misbehave on purpose: never read, stop mid-frame, vanish without a close frame;
- `one_message`: one message over the project's own client (WebSocketTransport + ClientSession).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.client import ClientProtocol
from websockets.protocol import State
from websockets.uri import parse_uri

from bidi_tts.frames import FrameKind
from bidi_tts.protocol import WS_PATH, SynthesizeRequest
from bidi_tts.session import ClientSession, ErrorReceived, MessageRecord, SynthesisCompleted
from bidi_tts.transports.websocket import WebSocketTransport
from bidi_tts_conformance.targets import ProcessTarget

START_TIMEOUT_S = float(os.environ.get("CONTAINER_START_TIMEOUT_S", "480"))
SHORT_TEXT = "Hello there."


@dataclass
class Container:
    """A running reference container process."""

    base_url: str
    pid: int
    log_path: Path

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def container_fixture(env: dict[str, str] | None = None) -> Callable[..., Iterator[Container]]:
    """A module-scoped pytest fixture running the reference container with `env` added."""

    @pytest.fixture(scope="module")
    def container(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Container]:
        log_path = tmp_path_factory.mktemp("container") / "container.log"
        target = ProcessTarget(ready_timeout=START_TIMEOUT_S, log_path=str(log_path))
        with pytest.MonkeyPatch.context() as mp:  # the child inherits os.environ at Popen time
            for key, value in (env or {}).items():
                mp.setenv(key, value)
            try:
                target.start()
            except RuntimeError as exc:
                tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else ""
                pytest.fail(f"reference container did not start: {exc}\n{tail}")
        proc = target._proc  # the pid is needed for the /proc probes
        assert proc is not None and target.base_url is not None
        try:
            yield Container(target.base_url, proc.pid, log_path)
        finally:
            target.stop()

    return container


# -- /proc probes ------------------------------------------------------------------------------
def rss_kb(pid: int) -> int:
    """Resident set size of `pid` in KiB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the whole process (all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


@dataclass(frozen=True)
class SocketRow:
    """One row of /proc/net/{tcp,tcp6,udp,udp6}."""

    table: str
    local: str  # "127.0.0.1:8080" / "[::]:8080"
    remote: str
    state: str  # hex TCP state: 0A LISTEN, 01 ESTABLISHED
    inode: str


def _addr(hex_addr: str) -> str:
    ip_hex, port_hex = hex_addr.split(":")
    raw = bytes.fromhex(ip_hex)
    if len(raw) == 4:
        return f"{socket.inet_ntop(socket.AF_INET, raw[::-1])}:{int(port_hex, 16)}"
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))  # 4 little-endian words
    return f"[{socket.inet_ntop(socket.AF_INET6, words)}]:{int(port_hex, 16)}"


def socket_table(pid: int) -> list[SocketRow]:
    """Every TCP/UDP socket of `pid`, from its network namespace's /proc tables."""
    rows = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            parts = line.split()
            rows.append(SocketRow(table, _addr(parts[1]), _addr(parts[2]), parts[3], parts[9]))
    return rows


def own_sockets(pid: int) -> list[SocketRow]:
    inodes = socket_inodes(pid)
    return [row for row in socket_table(pid) if row.inode in inodes]


# -- /ping watcher -----------------------------------------------------------------------------
@dataclass
class PingWatch:
    """Polls GET /ping in a thread; records every status (None: no answer within 2 s)."""

    base_url: str
    period_s: float = 0.25
    results: list[tuple[float, int | None, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> PingWatch:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=5)

    def _run(self) -> None:
        with httpx.Client(timeout=2.0) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    status: int | None = client.get(self.base_url + "/ping").status_code
                except httpx.HTTPError:
                    status = None
                self.results.append((started, status, time.monotonic() - started))
                self._stop.wait(self.period_s)

    def assert_healthy(self) -> None:
        assert self.results, "the /ping watcher never ran"
        bad = [(round(t, 2), s, round(d, 2)) for t, s, d in self.results if s != 200 or d > 2.0]
        assert not bad, f"/ping not 200 within 2 s: {bad[:10]} of {len(self.results)} polls"


# -- clients -----------------------------------------------------------------------------------
async def one_message(
    base_url: str, text: str = SHORT_TEXT, *, deadline_s: float = 120.0, **fields: Any
) -> MessageRecord:
    """Send one message in a fresh session; read until it is answered (complete or error)."""
    transport = await WebSocketTransport.open(base_url, open_timeout=10)
    session = ClientSession()
    try:
        request = SynthesizeRequest(text, **fields)
        await transport.send(session.synthesize(request, at=time.perf_counter()), kind=FrameKind.BINARY)
        end = time.monotonic() + deadline_s
        while True:
            frame = await transport.receive(timeout=max(0.01, end - time.monotonic()))
            for event in session.receive_frame(frame):
                if isinstance(event, (SynthesisCompleted, ErrorReceived)):
                    assert not session.violations, session.violations
                    return session.records[request.request_id]
    finally:
        await transport.close()


class RawWsClient:
    """A WebSocket client on a blocking socket that does only what the test tells it to."""

    def __init__(self, port: int, *, rcvbuf: int | None = None, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:  # before connect, so the window is small from the start
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        self.protocol = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}{WS_PATH}"), max_size=None)

    @property
    def local_port(self) -> int:
        return int(self.sock.getsockname()[1])

    def handshake(self) -> None:
        """Send the upgrade request and read exactly the response (one byte at a time, so no
        frame after it is taken off the socket)."""
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        while self.protocol.state is State.CONNECTING:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            self.protocol.receive_data(chunk)
        if self.protocol.state is not State.OPEN:
            raise ConnectionError(f"handshake failed: {self.protocol.handshake_exc!r}")
        self.protocol.events_received()  # the handshake Response: frames come after it

    def send_json(self, obj: dict[str, Any]) -> None:
        self.protocol.send_binary(json.dumps(obj).encode())
        self._flush()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _flush(self) -> None:
        self.sock.sendall(b"".join(self.protocol.data_to_send()))

    def abort(self) -> None:
        """Vanish: RST instead of a close frame or FIN."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self) -> None:
        self.sock.close()


def read_frames(client: RawWsClient, until: Callable[[list[Any]], bool], timeout: float) -> list[Any]:
    """Read frames (websockets `Frame`s) off a RawWsClient until `until(frames)` or the deadline."""
    frames: list[Any] = []
    end = time.monotonic() + timeout
    while not until(frames):
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"condition not met within {timeout} s ({len(frames)} frames)")
        client.sock.settimeout(left)
        data = client.sock.recv(65536)
        if not data:
            raise ConnectionError("the container closed the connection")
        client.protocol.receive_data(data)
        frames.extend(client.protocol.events_received())
    return frames
