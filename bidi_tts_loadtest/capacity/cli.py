"""Capacity of the reference container per scheduler and worker layout, side by side, in one run.

    uv run python -m loadtest.capacity --schedulers fifo round-robin deadline --layouts 1x2 2x1 \\
        --sessions 1 2 3 4 --seconds 40 --slo-ttfa-ms 2000 --json capacity.json

Starts one container per (scheduler, layout) (`WxT`: W synthesis workers with T onnxruntime
threads each), all loaded at once, then measures them interleaved: for each session count, every
container in turn (the order rotates per step) takes the same LLM-paced load, so a burst of noise
from the machine's other tenants is spread across all configurations instead of sinking one.

The load: each session speaks conversation turns (``bidi_tts_loadtest.core.turn``, the chunker releasing each
sentence as the simulated LLM streams it); the next turn starts when the listener would have heard
the previous one to the end, plus a pause. Per turn: TTFA from the LLM's first token to the first
audio frame, and underruns of a player that plays the whole turn from its first frame (all its
messages back to back; a stall over 50 ms counts). A configuration *holds* n sessions when, at n,
p95 TTFA is under the SLO and no turn underran; its *held* figure is the largest n it held, with any
smaller count that missed named beside it (``32 (missed 8)``: one noisy small step does not hide the
larger counts that held, and is not hidden either). The 1-minute load average is recorded beside every
step: on a shared machine the numbers mean little without it.

The modules, one job each: :mod:`bidi_tts_loadtest.core.container_config` (the configurations and their
container options),
:mod:`bidi_tts_loadtest.core.container` (starting them), :mod:`.load` (one step's load, on the core's
session loop), :mod:`.step` (its numbers), :mod:`.held` (the SLO's held rule), :mod:`.report`
(lines, tables, JSON, plot) and :mod:`.calibrate_cli` (the ``calibrate`` subcommand); this one is
the command line and the sweep's order.

Beside the latency table, two more, per configuration and session count:
- *decisions*: from the container's scheduler (``SCHEDULER_STATS_FILE``): picks, the share of picks
  where more than one session had a unit waiting (only there can the order matter), the share where
  the policy took another session than round-robin would have, and the queue depth at pick time;
- *demand against capacity*: the audio seconds per wall second that n LLM-paced listeners consume
  (each hears a turn of A seconds, then pauses, then waits TTFA for the next: n·A/(TTFA+A+pause)),
  at TTFA 0 and at the SLO, against what the container produced, how busy its workers were, and
  what it makes while busy (audio seconds per synthesis second, times the workers). When demand at
  the SLO exceeds the capacity while busy, no order of the work can hold n sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from bidi_tts.deadline import Deadline
from bidi_tts_loadtest.capacity import calibrate_cli as capacity_calibrate
from bidi_tts_loadtest.capacity.load import measure_step
from bidi_tts_loadtest.capacity.report import (
    compare_table,
    decisions_table,
    demand_table,
    payload,
    plot,
    step_line,
    table,
)
from bidi_tts_loadtest.capacity.step import StepResult
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.core.container import Container
from bidi_tts_loadtest.core.container_config import SCHEDULERS, Config, Layout, check_profile

READY_TIMEOUT_S = 600.0  # for every container of the sweep together to answer /ping 200


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["calibrate"]:
        return capacity_calibrate.main(argv[1:])
    args = _parse_args(argv)
    containers = [Container(c, args.port_base + i, args.log_dir) for i, c in enumerate(args.configs)]
    try:
        steps = sweep(containers, args)
    except RuntimeError as exc:
        print(f"capacity: {exc}", file=sys.stderr)
        return exit_codes.RUN_FAILED
    finally:
        for container in containers:
            container.stop()
    report(steps, args)
    return exit_codes.OK


def sweep(containers: list[Container], args: argparse.Namespace) -> list[StepResult]:
    """Every session count on every container, interleaved: the containers' order rotates per count,
    so the machine's noise is spread across them. RuntimeError when a container does not start."""
    ready_by = Deadline(READY_TIMEOUT_S)
    for container in containers:
        container.wait_ready(ready_by)
    print(f"# {len(containers)} containers ready; cpus={os.cpu_count()} load={os.getloadavg()}", flush=True)
    steps: list[StepResult] = []
    for i, n in enumerate(sorted(args.sessions)):
        order = containers[i % len(containers):] + containers[: i % len(containers)]
        for container in order:
            step = measure_step(container.url, container.name, n, args.seconds,
                                tokens_per_second=args.tokens_per_second, pause_s=args.pause,
                                read_sched=container.read_sched, basis=args.ttfa_basis, arrival_s=args.arrival)
            steps.append(step)
            print(step_line(step), flush=True)
    return steps


def report(steps: list[StepResult], args: argparse.Namespace) -> None:
    """The tables on stdout; the JSON and the plot where asked."""
    counts = tuple(sorted(set(args.sessions)))
    focus = counts if len(counts) <= 6 else (tuple(n for n in (1, 2, 4) if n in counts) or counts[:1])
    print(f"# TTFA per {args.ttfa_basis}; load average 1m at the end: {os.getloadavg()[0]:.1f}")
    print()
    print(table(steps, args.slo_ttfa_ms, focus))
    if any(c.backend == "timed" for c in args.configs) and any(c.backend == "onnx" for c in args.configs):
        print()
        print(compare_table(steps))
    print()
    print(decisions_table(steps, focus))
    print()
    print(demand_table(steps, args.slo_ttfa_ms, focus))
    if args.json:
        args.json.write_text(json.dumps(payload(steps, args.slo_ttfa_ms, os.cpu_count(), args.ttfa_basis), indent=2))
    if args.plot:
        plot(steps, args.plot, args.slo_ttfa_ms)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = exit_codes.Parser(prog="python -m loadtest.capacity", description=__doc__.split("\n\n")[0],
                          epilog="`python -m loadtest.capacity calibrate --help`: fit a timed-backend profile.")
    p.add_argument("--schedulers", nargs="+", default=["fifo", "round-robin", "deadline"],
                   choices=list(SCHEDULERS))
    p.add_argument("--layouts", nargs="+", type=Layout.parse, default=[Layout(1, 2), Layout(2, 1)],
                   help="WORKERSxTHREADS, e.g. 1x2 (one worker, two intra-op threads) 2x1")
    p.add_argument("--configs", nargs="+", metavar="SPEC",
                   help="instead of --schedulers x --layouts: [onnx:|timed[=PROFILE]:]SCHEDULER[/WxT][/batchMS]"
                        "[/whole], e.g. deadline/4x1/batch5 or timed=h200-eager:fifo/1x1/whole")
    p.add_argument("--backend", choices=["onnx", "timed"], default="onnx",
                   help="backend of configurations that name none (default onnx)")
    p.add_argument("--timed-profile", metavar="NAME|PATH", help="profile of timed configurations that name none")
    p.add_argument("--ttfa-basis", choices=["turn", "message", "first"], default="turn",
                   help="turn: from the LLM's first token (waits for the LLM too); message: from each "
                        "message's send; first: each turn's first message from its send (what a listener "
                        "waits once the LLM's first sentence is out)")
    p.add_argument("--sessions", nargs="+", type=int, default=[1, 2, 3, 4])
    p.add_argument("--seconds", type=float, default=40.0, help="length of one step")
    p.add_argument("--slo-ttfa-ms", type=float, default=2000.0)
    p.add_argument("--tokens-per-second", type=float, default=40.0)
    p.add_argument("--pause", type=float, default=1.0, help="seconds a listener waits before the next turn")
    p.add_argument("--arrival", type=float, default=0.0, metavar="S",
                   help="spread the sessions' first turns evenly over S seconds (default 0: all at once)")
    p.add_argument("--port-base", type=int, default=18600)
    p.add_argument("--json", type=Path, help="write every step's numbers here")
    p.add_argument("--plot", type=Path, help="write a PNG of TTFA p95 and underruns against sessions here")
    p.add_argument("--log-dir", type=Path, default=Path("/tmp"))
    args = p.parse_args(argv)
    if any(n < 1 for n in args.sessions) or args.seconds <= 0 or not 0 <= args.arrival < args.seconds:
        p.error("--sessions must be at least 1, --seconds positive and --arrival from 0 to below --seconds")
    if args.backend == "timed" and not args.timed_profile and not args.configs:
        p.error("--backend timed needs --timed-profile NAME|PATH")
    try:
        if args.configs:
            args.configs = [Config.parse(c, args.backend, args.timed_profile) for c in args.configs]
        else:
            args.configs = [Config(s, layout, args.backend, args.timed_profile)
                            for layout in args.layouts for s in args.schedulers]
    except argparse.ArgumentTypeError as exc:
        p.error(str(exc))
    names = [c.name for c in args.configs]
    if len(set(names)) != len(names):
        p.error("two configurations are the same")
    profiles = {c.profile for c in args.configs if c.profile}
    for profile in profiles:  # a bad profile: one line now, not a container that dies later
        error = check_profile(profile)
        if error:
            p.error(error)
    return args


if __name__ == "__main__":
    sys.exit(main())
