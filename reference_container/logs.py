"""Structured key=value logging for the container (one event per line, easy to grep and parse)."""

from __future__ import annotations

import logging
import sys


def setup_logging(level: str) -> None:
    """Log `time level logger key=value ...` lines to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("ts=%(asctime)s level=%(levelname)s logger=%(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Libraries that chat at INFO on every request.
    for noisy in ("httpx", "urllib3", "phonemizer", "numba"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def kv(**fields: object) -> str:
    """Format fields as key=value; floats to milliseconds precision, strings quoted when needed."""
    parts = []
    for key, value in fields.items():
        if isinstance(value, float):
            text = f"{value:.4f}"
        else:
            text = str(value)
            if not text or any(c.isspace() or c in '"=' for c in text):
                text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        parts.append(f"{key}={text}")
    return " ".join(parts)
