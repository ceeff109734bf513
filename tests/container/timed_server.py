"""Start the reference container with the timed backend (no model files; ready in about a second)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from bidi_tts.local_container import LocalContainer

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0


@contextlib.contextmanager
def timed_container(profile: str, *extra: str, log_path: Path | None = None) -> Iterator[str]:
    """A running `--backend timed --timed-profile PROFILE` container; yields its URL."""
    container = LocalContainer(args=["--backend", "timed", "--timed-profile", profile, "--log-level", "warning",
                                     *extra], log=log_path)
    try:
        waited = container.wait_ready(READY_TIMEOUT_S, interval=0.1)
        if waited.outcome == "exited":
            raise RuntimeError(f"timed container exited with {container.returncode}")
        if not waited.ready:
            raise RuntimeError(f"timed container not ready within {READY_TIMEOUT_S:g} s")
        yield container.url
    finally:
        container.stop(grace=10)
