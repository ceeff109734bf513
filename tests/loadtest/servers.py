"""Start loadtest.known_latency in its own process on a free loopback port (test helper)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bidi_tts.local_container import free_port

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def known_latency_server(ttfa_ms: float, *extra: str) -> Iterator[str]:
    """Yields the server's http:// URL; the server sleeps exactly `ttfa_ms` before first audio."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bidi_tts_loadtest.known_latency", "--port", str(port),
                             "--ttfa-ms", str(ttfa_ms), *extra], cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("known-latency server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def locust_cmd(*args: str) -> list[str]:
    """The pinned command line: locust -f loadtest/locustfile.py ..."""
    return [sys.executable, "-m", "locust", "-f", str(ROOT / "loadtest" / "locustfile.py"), *args]
