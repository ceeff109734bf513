"""Command-line options the locustfile adds to Locust's own."""

from __future__ import annotations

from typing import Any

from bidi_tts_loadtest.core.arg_types import non_negative_float, non_negative_int, positive_float, positive_int
from bidi_tts_loadtest.core.target import add_dialect_argument, add_target_arguments
from bidi_tts_loadtest.run.slo import SLO_OPTIONS


def add_arguments(parser: Any) -> None:
    """Register every load-test option on Locust's (configargparse) parser, visible in the web UI."""
    actions: list[Any] = []
    g = parser.add_argument_group("bidi-tts target (a container is --host, e.g. http://127.0.0.1:8080)")
    actions += add_target_arguments(g)
    actions.append(add_dialect_argument(g))

    c = parser.add_argument_group("bidi-tts conversation")
    actions += [
        c.add_argument("--tokens-per-second", type=positive_float, default=40.0, help="simulated LLM token rate"),
        c.add_argument("--first-token-ms", type=non_negative_float, default=0.0,
                       help="simulated LLM first-token delay"),
        c.add_argument("--turns-per-session", type=positive_int, default=3, help="turns on one session before close"),
        c.add_argument("--turn-pause-s", type=non_negative_float, default=0.5,
                       help="pause between turns (the user speaks)"),
        c.add_argument("--voice", default="af_heart", help="voice of every message"),
        c.add_argument("--message-timeout-s", type=positive_float, default=30.0,
                       help="silence that fails a message"),
        c.add_argument("--seed", type=int, default=0, help="seed for picking answers from the corpus"),
    ]

    r = parser.add_argument_group("bidi-tts reports")
    actions += [
        r.add_argument("--summary-json", default=None, help="write the exact-percentile summary here"),
        r.add_argument("--report-dir", default=None, help="write CDF, timeline (and sweep) PNGs here"),
        r.add_argument("--wav-dumps", type=non_negative_int, default=0,
                       help="save the audio of this many turns per process as --report-dir/wav/"
                       "session-S-message-M.wav, each with its text in a .txt beside it"),
        r.add_argument("--verify-audio-every", type=non_negative_int, default=0, metavar="N",
                       help="hear every Nth turn with offline speech recognition in another process and count "
                       "content errors (needs the 'hearing' extra; 0: off)"),
    ]

    s = parser.add_argument_group("bidi-tts SLO gate (any of them makes the exit code the verdict)")
    actions += [s.add_argument(o.flag, type=o.type, default=None, help=o.help) for o in SLO_OPTIONS]

    h = parser.add_argument_group("bidi-tts load shapes (default: Locust's -u/-r/--run-time)")
    actions += [
        h.add_argument("--shape", choices=["none", "steady", "ramp", "sweep"], default="none",
                       help="load shape (none: Locust's -u/-r/--run-time)"),
        h.add_argument("--shape-users", type=positive_int, default=10, help="steady: sessions; ramp: final sessions"),
        h.add_argument("--shape-start-users", type=positive_int, default=1,
                       help="ramp and sweep: first concurrency"),
        h.add_argument("--shape-step-users", type=positive_int, default=2, help="sweep: concurrency added per step"),
        h.add_argument("--shape-max-users", type=positive_int, default=64, help="sweep: highest concurrency tried"),
        h.add_argument("--shape-step-s", type=positive_float, default=30.0,
                       help="sweep: seconds per step; steady/ramp: hold time"),
        h.add_argument("--shape-warmup-s", type=non_negative_float, default=5.0,
                       help="sweep: seconds of each step not judged"),
        h.add_argument("--shape-ramp-s", type=positive_float, default=30.0,
                       help="ramp: seconds from start to final users"),
    ]
    for action in actions:  # argument groups bypass Locust's add_argument, which sets these
        if action.default is not None and action.help and "default" not in action.help:
            action.help += f" (default: {action.default})"  # literal, not %(default)s: the web UI shows help raw
        action.include_in_web_ui = True
        action.is_secret = False
        action.is_required = False
        action.is_multiple = False
