"""Command-line options the locustfile adds to Locust's own."""

from __future__ import annotations

from typing import Any


def add_arguments(parser: Any) -> None:
    """Register every load-test option on Locust's (configargparse) parser."""
    g = parser.add_argument_group("bidi-tts target (a container is --host)")
    g.add_argument("--endpoint-name", default=None, help="SageMaker endpoint to load instead of --host")
    g.add_argument("--region", default=None, help="AWS region of --endpoint-name")
    g.add_argument("--endpoint-url", default=None, help="SageMaker runtime URL (a local stand-in)")
    g.add_argument("--endpoint-ca", default=None, help="CA certificate file that --endpoint-url presents")

    c = parser.add_argument_group("bidi-tts conversation")
    c.add_argument("--tokens-per-second", type=float, default=40.0, help="simulated LLM token rate")
    c.add_argument("--first-token-ms", type=float, default=0.0, help="simulated LLM first-token delay")
    c.add_argument("--turns-per-session", type=int, default=3, help="turns on one session before close")
    c.add_argument("--turn-pause-s", type=float, default=0.5, help="pause between turns (the user speaks)")
    c.add_argument("--voice", default="af_heart", help="voice of every message")
    c.add_argument("--message-timeout-s", type=float, default=30.0, help="silence that fails a message")
    c.add_argument("--seed", type=int, default=0, help="seed for picking answers from the corpus")

    r = parser.add_argument_group("bidi-tts reports")
    r.add_argument("--summary-json", default=None, help="write the exact-percentile summary here")
    r.add_argument("--report-dir", default=None, help="write CDF, timeline (and sweep) PNGs here")
    r.add_argument("--wav-dumps", type=int, default=0, help="save the audio of this many turns as WAV "
                   "(per process) in --report-dir/wav")

    s = parser.add_argument_group("bidi-tts SLO gate (any of them makes the exit code the verdict)")
    s.add_argument("--slo-ttfa-p95-ms", type=float, default=None)
    s.add_argument("--slo-ttfa-p99-ms", type=float, default=None)
    s.add_argument("--slo-complete-p95-ms", type=float, default=None)
    s.add_argument("--slo-error-rate", type=float, default=None, help="largest failed/attempted, 0..1")
    s.add_argument("--slo-underruns", type=int, default=None, help="most playback underruns allowed")
    s.add_argument("--slo-goodput", type=float, default=None, help="least share of sessions meeting the SLO")

    h = parser.add_argument_group("bidi-tts load shapes (default: Locust's -u/-r/--run-time)")
    h.add_argument("--shape", choices=["none", "steady", "ramp", "sweep"], default="none")
    h.add_argument("--shape-users", type=int, default=10, help="steady: sessions; ramp: final sessions")
    h.add_argument("--shape-start-users", type=int, default=1, help="ramp and sweep: first concurrency")
    h.add_argument("--shape-step-users", type=int, default=2, help="sweep: concurrency added per step")
    h.add_argument("--shape-max-users", type=int, default=64, help="sweep: highest concurrency tried")
    h.add_argument("--shape-step-s", type=float, default=30.0, help="sweep: seconds per step; "
                   "steady/ramp: hold time")
    h.add_argument("--shape-warmup-s", type=float, default=5.0, help="sweep: seconds of each step not judged")
    h.add_argument("--shape-ramp-s", type=float, default=30.0, help="ramp: seconds from start to final users")
