"""Start the reference container with the timed backend (no model files; ready in about a second)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.toys.good import free_port

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def timed_container(profile: str, *extra: str, log_path: Path | None = None) -> Iterator[str]:
    """A running `--backend timed --timed-profile PROFILE` container; yields its URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "reference_container", "--host", "127.0.0.1", "--port", str(port),
           "--backend", "timed", "--timed-profile", profile, "--log-level", "warning", *extra]
    out = log_path.open("wb") if log_path else subprocess.DEVNULL
    process = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"timed container exited with {process.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/ping", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("timed container not ready within 60 s")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log_path and hasattr(out, "close"):
            out.close()
