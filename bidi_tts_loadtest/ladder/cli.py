"""Concurrency ladders: how much one instance takes before p95 time to first audio breaks the SLO.

    python -m bidi_tts_loadtest.ladder --container-url URL --load request --loop closed \\
        --levels 1 5 10 20 30 40 50 60 --hold-s 240 --measure-s 60 --idle-s 30 --slo-ms 3000 --json ladder.json
    python -m bidi_tts_loadtest.ladder --timed-profile g5-xlarge --config fifo/1x1/whole ...
    python -m bidi_tts_loadtest.ladder --endpoint-name NAME [--region R --endpoint-url URL --endpoint-ca ca.pem] ...

Each level is one *rung*: held ``--hold-s`` seconds, the last ``--measure-s`` measured, then
``--drain-s`` for what is in flight to finish and ``--idle-s`` of quiet before the next. The loop is
closed (N clients, each sending its next request or session the moment the last returned) or open
(Poisson arrivals at a rate per second, seeded). Q_max is the largest usable rung that meets the SLO,
bracketed by a failing usable rung above it or reported as a lower bound; with ``--runs K`` the
minimum over runs and their spread. A rung where the client was the limit, or with errors or
refusals, is unusable: it says why and does not count. Climbing stops after ``--stop-after-fails``
usable rungs in a row missed the SLO (default 2: one miss may be noise, two are the knee).

Modules: :mod:`.loops` (the two loops), :mod:`.request` and :mod:`.sessions` (the
two loads), :mod:`.rung` (a rung's numbers and usability), :mod:`.result` (Q_max, lines,
table), :mod:`.texts` (the short texts); this one is the command line, the targets and the JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bidi_tts.deadline import Deadline
from bidi_tts.local_container import free_port
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.core.arg_types import non_negative_float, non_negative_int, positive_float, positive_int
from bidi_tts_loadtest.core.container import Container
from bidi_tts_loadtest.core.container_config import Config, check_profile
from bidi_tts_loadtest.core.preflight import target_unreachable
from bidi_tts_loadtest.core.settings import iso, versions
from bidi_tts_loadtest.core.target import (
    add_dialect_argument,
    add_target_arguments,
    container_url_problem,
    region,
    target_problem,
)
from bidi_tts_loadtest.ladder import result as ladder_result
from bidi_tts_loadtest.ladder.loops import JobFactory, closed_loop, open_loop
from bidi_tts_loadtest.ladder.rung import DEFAULT_MAX_LAG_MS, Collected, rung
from bidi_tts_loadtest.ladder.texts import SHORT_TEXTS_PATH, TextsError, load_texts, mean_chars

PROG = "python -m bidi_tts_loadtest.ladder"
DEFAULT_CONFIG = "fifo/1x1/whole"  # one request at a time, whole messages: like the AWS sample's container
READY_TIMEOUT_S = 120.0
UNITS = {("request", "closed"): "clients", ("request", "open"): "requests_per_s",
         ("session", "closed"): "sessions", ("session", "open"): "sessions_per_s"}


def build_parser() -> argparse.ArgumentParser:
    p = exit_codes.Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    t = p.add_argument_group("target (one of --container-url, --endpoint-name, --timed-profile)")
    t.add_argument("--container-url", help="container base URL, e.g. http://127.0.0.1:8080")
    add_target_arguments(t)
    add_dialect_argument(t)
    t.add_argument("--timed-profile", metavar="NAME|PATH",
                   help="start a local reference container with --backend timed and this profile, stop it at the end")
    t.add_argument("--config", metavar="SPEC", help=f"with --timed-profile: SCHEDULER[/WxT][/batchMS][/whole] "
                                                    f"(default {DEFAULT_CONFIG})")
    p.add_argument("--load", choices=["request", "session"], default="request",
                   help="request: POST /invocations, one whole text each; session: LLM-paced bidirectional sessions")
    p.add_argument("--loop", choices=["closed", "open"], default="closed",
                   help="closed: N clients back to back; open: Poisson arrivals at a rate per second")
    p.add_argument("--levels", nargs="+", type=positive_float, required=True,
                   help="closed: clients (or sessions); open: arrivals per second")
    p.add_argument("--hold-s", type=positive_float, default=240.0, help="seconds each rung is held (default 240)")
    p.add_argument("--measure-s", type=positive_float, default=60.0,
                   help="the last seconds of the hold that are measured (default 60)")
    p.add_argument("--drain-s", type=non_negative_float, default=30.0,
                   help="seconds for in-flight work to finish after the hold; not measured (default 30)")
    p.add_argument("--idle-s", type=non_negative_float, default=30.0, help="quiet seconds between rungs (default 30)")
    p.add_argument("--runs", type=positive_int, default=1, help="whole ladders; Q_max is their minimum (default 1)")
    p.add_argument("--slo-ms", type=positive_float, default=3000.0, help="p95 time to first audio (default 3000)")
    p.add_argument("--stop-after-fails", type=non_negative_int, default=2,
                   help="stop climbing after this many usable rungs in a row over the SLO; 0: climb all (default 2)")
    p.add_argument("--seed", type=int, default=1, help="open loop: seed of the arrivals (default 1)")
    p.add_argument("--max-in-flight", type=positive_int, default=256,
                   help="open loop: client threads, so the most requests or sessions at once (default 256)")
    p.add_argument("--max-lag-ms", type=positive_float, default=DEFAULT_MAX_LAG_MS,
                   help="open loop: a rung whose p95 send lag is over this is unusable "
                        f"(default {DEFAULT_MAX_LAG_MS:g})")
    p.add_argument("--texts", type=Path, default=None,
                   help="request load: a file of texts, one a line (default: ~25-character sentences shipped)")
    p.add_argument("--timeout-s", type=positive_float, default=60.0, help="longest wait for one request (default 60)")
    s = p.add_argument_group("session load")
    s.add_argument("--tokens-per-second", type=positive_float, default=40.0, help="simulated LLM rate (default 40)")
    s.add_argument("--pause-s", type=non_negative_float, default=1.0,
                   help="a listener's pause after hearing a turn (default 1)")
    s.add_argument("--session-turns", type=positive_int, default=3,
                   help="open loop: turns each arriving session speaks (default 3)")
    p.add_argument("--json", type=Path, default=None, help="write the ladder here")
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    given = (("--container-url", args.container_url), ("--endpoint-name", args.endpoint_name),
             ("--timed-profile", args.timed_profile))
    targets = [name for name, value in given if value]
    if len(targets) != 1:
        p.error("give one target: --container-url URL, --endpoint-name NAME or --timed-profile NAME|PATH"
                + (f" (not {' and '.join(targets)})" if targets else ""))
    if args.load == "request" and args.dialect != "kokoro-sample":
        p.error(f"--load request is POST /invocations, which only the kokoro-sample dialect has; with --dialect "
                f"{args.dialect} use --load session")
    if args.config and not args.timed_profile:
        p.error("--config goes with --timed-profile")
    if args.measure_s > args.hold_s:
        p.error(f"--measure-s {args.measure_s:g} is longer than --hold-s {args.hold_s:g}: "
                "the measured part is in the hold")
    if args.loop == "closed" and any(level != int(level) for level in args.levels):
        p.error("--levels of a closed loop are numbers of clients: whole numbers")
    if len(set(args.levels)) != len(args.levels):
        p.error("--levels: a level is given twice")
    if args.container_url:
        problem = container_url_problem(args.container_url)
        if problem:
            p.error(problem.replace("--host http://HOST:PORT", "--container-url http://HOST:PORT"))
    elif args.endpoint_name:
        problem = target_problem(args, None)
        if problem:
            p.error(problem)
    else:
        error = check_profile(args.timed_profile)
        if error:
            p.error(error)
        try:
            args.config_obj = Config.parse(args.config or DEFAULT_CONFIG, "timed", args.timed_profile)
        except argparse.ArgumentTypeError as exc:
            p.error(str(exc))
    try:
        args.texts_list = load_texts(args.texts or SHORT_TEXTS_PATH)
    except TextsError as exc:
        p.error(str(exc))
    return args


def target_block(args: argparse.Namespace, url: str | None) -> dict[str, Any]:
    kind = "timed" if args.timed_profile else ("endpoint" if args.endpoint_name else "url")
    return {"kind": kind, "url": url if kind != "endpoint" else args.endpoint_url,
            "endpoint_name": args.endpoint_name, "region": region(args) if args.endpoint_name else None,
            "profile": args.timed_profile, "config": (args.config or DEFAULT_CONFIG) if args.timed_profile else None,
            "image": None, "dialect": args.dialect}


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@contextmanager
def target_url(args: argparse.Namespace) -> Iterator[str | None]:
    """The URL the load goes to (None for an endpoint); a timed container lives for the block."""
    if not args.timed_profile:
        yield args.container_url
        return
    container = Container(args.config_obj, free_port(), Path(tempfile.mkdtemp(prefix="ladder-")))
    try:
        print(f"# starting a timed container: {args.config_obj.name}", flush=True)
        container.wait_ready(Deadline(READY_TIMEOUT_S))
        yield container.url
    finally:
        container.stop()


def job_factory(args: argparse.Namespace, url: str | None) -> JobFactory:
    if args.load == "session":
        from bidi_tts_loadtest.ladder.sessions import session_jobs

        return session_jobs(args, url)
    if url is not None:
        from bidi_tts_loadtest.ladder.request import url_jobs

        return url_jobs(url, args.timeout_s)
    from bidi_tts_loadtest.ladder.request import endpoint_client, endpoint_jobs

    client = endpoint_client(region(args), args.endpoint_url, args.endpoint_ca,
                             pool=int(max(args.levels)) if args.loop == "closed" else args.max_in_flight,
                             timeout_s=args.timeout_s)
    return endpoint_jobs(client, args.endpoint_name)


RungRunner = Callable[[float, int, int], Collected]


def climb(args: argparse.Namespace, run_rung: RungRunner, out: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Every run's ladder, rung by rung, with a line as each starts and ends."""
    unit = UNITS[(args.load, args.loop)]
    rungs: list[dict[str, Any]] = []
    first = True
    for run in range(1, args.runs + 1):
        fails = 0
        for index, level in enumerate(sorted(args.levels)):
            if not first and args.idle_s:
                time.sleep(args.idle_s)
            first = False
            out(ladder_result.start_line(run, args.runs, level, unit, args.hold_s, args.measure_s))
            collected = run_rung(level, run, index)
            entry = rung(collected, run=run, unit=unit, slo_ms=args.slo_ms, load=args.load,
                         max_lag_ms=args.max_lag_ms)
            rungs.append(entry)
            out(ladder_result.rung_line(entry, args.slo_ms))
            if entry["usable"]:
                fails = 0 if entry["meets_slo"] else fails + 1
            if args.stop_after_fails and fails >= args.stop_after_fails:
                out(f"# run {run}: {fails} usable rungs in a row over the SLO: stop climbing")
                break
    return rungs


def rung_runner(args: argparse.Namespace, jobs: JobFactory) -> RungRunner:
    items: Sequence[str]
    if args.load == "session":
        from bidi_tts_loadtest.core.corpus import load_answers

        items = load_answers()
    else:
        items = args.texts_list

    def run_rung(level: float, run: int, index: int) -> Collected:
        if args.loop == "closed":
            return closed_loop(jobs, int(level), items, hold_s=args.hold_s, measure_s=args.measure_s,
                               drain_s=args.drain_s)
        return open_loop(jobs, level, items, hold_s=args.hold_s, measure_s=args.measure_s, drain_s=args.drain_s,
                         seed=args.seed + 1000 * run + index, max_in_flight=args.max_in_flight)

    return run_rung


def payload(args: argparse.Namespace, url: str | None, rungs: list[dict[str, Any]], started: float,
            finished: float) -> dict[str, Any]:
    return {
        "kind": "bidi-tts-ladder", "version": 1, "load": args.load, "loop": args.loop,
        "target": target_block(args, url),
        "settings": {"levels": sorted(args.levels), "hold_s": args.hold_s, "measure_s": args.measure_s,
                     "drain_s": args.drain_s, "idle_s": args.idle_s, "runs": args.runs, "slo_ms": args.slo_ms,
                     "seed": args.seed, "texts": str(args.texts or SHORT_TEXTS_PATH.name),
                     "texts_mean_chars": mean_chars(args.texts_list) if args.load == "request" else None,
                     "stop_after_fails": args.stop_after_fails, "max_in_flight": args.max_in_flight,
                     "max_lag_ms": args.max_lag_ms, "timeout_s": args.timeout_s,
                     **({"tokens_per_second": args.tokens_per_second, "pause_s": args.pause_s,
                         "session_turns": args.session_turns} if args.load == "session" else {})},
        "versions": {**versions(), "git_sha": git_sha()},
        "started_at": iso(started), "finished_at": iso(finished),
        "rungs": rungs,
        "result": ladder_result.result(rungs, runs=args.runs, load=args.load, loop=args.loop),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.timed_profile:
        dead = target_unreachable(args, args.container_url)
        if dead is not None:
            print(f"ladder: {dead}", file=sys.stderr)
            return exit_codes.UNREACHABLE
    started = time.time()
    try:
        with target_url(args) as url:
            rungs = climb(args, rung_runner(args, job_factory(args, url)), out=lambda line: print(line, flush=True))
    except RuntimeError as exc:
        print(f"ladder: {exc}", file=sys.stderr)
        return exit_codes.RUN_FAILED
    except KeyboardInterrupt:
        print("ladder: interrupted", file=sys.stderr)
        return exit_codes.RUN_FAILED
    data = payload(args, url, rungs, started, time.time())
    print()
    print(ladder_result.table(rungs))
    print(ladder_result.verdict_line(data["result"], UNITS[(args.load, args.loop)]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return exit_codes.OK if data["result"]["q_max"] else exit_codes.BROKEN


if __name__ == "__main__":
    sys.exit(main())
