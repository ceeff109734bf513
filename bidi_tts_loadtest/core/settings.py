"""What a load run was asked to do, recorded in its summary so two runs can be compared.

vLLM's benchmark result files are the model: the numbers travel with the settings that made them.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

#: Options copied into the summary's "settings" as they were given (None when not set).
RECORDED_OPTIONS = (
    "endpoint_name", "region", "endpoint_url", "dialect", "tokens_per_second", "first_token_ms", "turns_per_session",
    "turn_pause_s", "voice", "message_timeout_s", "seed", "shape", "shape_users", "shape_start_users",
    "shape_step_users", "shape_max_users", "shape_step_s", "shape_warmup_s", "shape_ramp_s",
    "verify_audio_every", "expect_workers",
)


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    return {"bidi-tts": _version("bidi-tts"), "locust": _version("locust"), "python": platform.python_version()}


def iso(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def run_settings(options: Any, host: str | None, started: float | None, ended: float | None) -> dict[str, Any]:
    """The settings block of a summary: target, load, conversation, times and versions."""
    settings: dict[str, Any] = {
        "host": None if getattr(options, "endpoint_name", None) else host,
        "users": getattr(options, "num_users", None),
        "spawn_rate": getattr(options, "spawn_rate", None),
        "run_time_s": getattr(options, "run_time", None),
        "workers": getattr(options, "expect_workers", None) if getattr(options, "master", False) else None,
    }
    settings.update({name: getattr(options, name, None) for name in RECORDED_OPTIONS if name != "expect_workers"})
    settings["started_at"] = iso(started)
    settings["ended_at"] = iso(ended)
    settings["duration_s"] = None if started is None or ended is None else round(ended - started, 3)
    settings["versions"] = versions()
    return settings
