"""Plan a fleet: min and max instances, the autoscaling target and cooldowns, and the cost, from one
instance's measured capacity (docs/capacity.md, "Plan a fleet").

    python -m bidi_tts_loadtest.plan --ladder ladder.json --peak-rps 5000 --trough-rps 10 \
        --slo-ms 3000 --scale-out-s 320 --surge 1.25 --instance-type ml.g5.xlarge --json plan.json

Exit 0 when no finding is STOP, 1 when one is, 4 for bad input (docs/exit-codes.md).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bidi_tts.fleet_plan import Curve, PlanFileError
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.fleet.replay import ReplayOptions
from bidi_tts_loadtest.fleet.traces import BUILTIN
from bidi_tts_loadtest.ladder.result_file import LadderError, read_ladder
from bidi_tts_loadtest.plan.findings import Finding, findings, has_stop, simulation_finding
from bidi_tts_loadtest.plan.prices import REGION, UnknownPrice, price_for
from bidi_tts_loadtest.plan.report import plan_json, render
from bidi_tts_loadtest.plan.self_check import NO_TRACE, self_check, trace_for
from bidi_tts_loadtest.plan.size import Requirements, Sizing, default_chars_per_session_s, plan_requests, plan_sessions

SESSION_OPTS = ("held_sessions", "peak_sessions", "trough_sessions", "chars_per_session_s")
REQUEST_OPTS = ("qmax", "rps_at_qmax", "service_p95_ms", "service_mean_ms", "peak_rps", "trough_rps",
                "chars_per_request")
HAND_GIVEN = ("qmax", "rps_at_qmax", "service_p95_ms", "service_mean_ms", "held_sessions")


def _finite(test: Callable[[float], bool], wanted: str) -> Callable[[str], float]:
    """An argparse type: a finite number that passes `test`, else one line saying it must be `wanted`."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or not test(value):
            raise argparse.ArgumentTypeError(f"{text!r} must be a number {wanted}")
        return value
    return parse


_positive = _finite(lambda v: v > 0, "> 0")
_not_negative = _finite(lambda v: v >= 0, ">= 0")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


def build_parser() -> exit_codes.Parser:
    p = exit_codes.Parser(prog="python -m bidi_tts_loadtest.plan", description=(__doc__ or "").splitlines()[0],
                          epilog="exit codes: 0 planned, no STOP finding; 1 a STOP finding (the plan is still "
                                 "written); 4 bad input (docs/exit-codes.md). The rule and the sample's scenario: "
                                 "docs/capacity.md, 'Plan a fleet'.")
    cap = p.add_argument_group("per-instance capacity (one form)")
    cap.add_argument("--ladder", metavar="FILE", help="a ladder result of the load tool (request or session)")
    cap.add_argument("--held-sessions", type=_not_negative, metavar="N", help="sessions one instance holds at the SLO")
    cap.add_argument("--qmax", type=_positive, metavar="Q", help="requests in system at the SLO's edge")
    cap.add_argument("--rps-at-qmax", type=_positive, metavar="R", help="completions per second at Q_max")
    cap.add_argument("--service-p95-ms", type=_positive, metavar="S", help="uncontended service time p95")
    cap.add_argument("--service-mean-ms", type=_positive, metavar="S",
                     help="uncontended service time mean (default: the p95, the slower curve)")
    dem = p.add_argument_group("demand")
    dem.add_argument("--peak-sessions", type=_not_negative, metavar="P")
    dem.add_argument("--trough-sessions", type=_not_negative, metavar="Q")
    dem.add_argument("--peak-rps", type=_not_negative, metavar="P")
    dem.add_argument("--trough-rps", type=_not_negative, metavar="Q")
    dem.add_argument("--chars-per-request", type=_positive, metavar="C", help="request load (default: the ladder's)")
    dem.add_argument("--chars-per-session-s", type=_positive, metavar="C",
                     help="characters spoken per session-second (default: the session ladder's, else the "
                          "load test's corpus)")
    pol = p.add_argument_group("policy")
    pol.add_argument("--slo-ms", type=_positive, required=True, metavar="MS", help="p95 time to first audio")
    pol.add_argument("--scale-out-s", type=_positive, required=True, metavar="S",
                     help="seconds from the load passing the target to the new instance serving "
                          "(the alarm's detection lag included)")
    pol.add_argument("--surge", type=float, required=True, metavar="RATIO",
                     help="how much load may grow within the scale-out time, 1 <= RATIO < 2")
    pol.add_argument("--instance-type", required=True, metavar="TYPE")
    pol.add_argument("--price", type=_positive, metavar="USD_PER_HOUR", help="overrides the price table")
    pol.add_argument("--region", default=REGION, help=f"for the price table (default {REGION})")
    pol.add_argument("--min-floor", type=_count, default=2, metavar="N",
                     help="fewest instances, for availability across zones (default 2)")
    pol.add_argument("--quota", type=_count, metavar="N", help="instances the account allows (STOP above it)")
    sim = p.add_argument_group("the plan's own check (a simulation, not a measurement)")
    sim.add_argument("--trace", default=BUILTIN, metavar="TRACE",
                     help=f"replay the plan on {BUILTIN} (the documented ramp from the trough, hold, surge and fall, "
                          f"the default), a JSON file [[t_s, load], ...], or {NO_TRACE}; a plan that fails gets its "
                          "floor raised until it passes")
    sim.add_argument("--surge-start-s", type=_not_negative, metavar="S", help="a FILE trace's surge start")
    p.add_argument("--json", metavar="OUT", help="write the plan as JSON")
    return p


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n) is not None]


def make_plan(args: argparse.Namespace, parser: exit_codes.Parser) -> Sizing:
    sessions, requests = _given(args, SESSION_OPTS), _given(args, REQUEST_OPTS)
    if sessions and requests:
        parser.error(f"give the sessions form or the request form, not both ({', '.join(sessions + requests)})")
    if not 1 <= args.surge < 2:
        parser.error(f"--surge {args.surge:g} must be >= 1 and < 2 (1.25: load may grow by a quarter)")
    try:
        price = price_for(args.instance_type, args.region, args.price)
        ladder = read_ladder(args.ladder) if args.ladder else None
    except UnknownPrice as exc:
        parser.error(str(exc))
    except LadderError as exc:
        parser.error(f"--ladder {args.ladder}: {exc}")
    if ladder is not None and _given(args, HAND_GIVEN):
        parser.error(f"give the capacity once: --ladder or {', '.join(_given(args, HAND_GIVEN))}")
    load = ladder.load if ladder else ("session" if args.held_sessions is not None else
                                       "request" if args.qmax is not None or args.rps_at_qmax is not None
                                       or args.service_p95_ms is not None else None)
    if load is None:
        parser.error("no capacity: give --ladder FILE, --held-sessions N, or --qmax Q --rps-at-qmax R "
                     "--service-p95-ms S")
    if (load == "session" and requests) or (load == "request" and sessions):
        parser.error(f"a {load} ladder plans {load} demand; got {', '.join(sessions + requests)}")
    needs = Requirements(args.slo_ms, args.scale_out_s, args.surge, args.min_floor, args.quota, args.instance_type,
                         args.region, price)
    if load == "session":
        peak, trough = _demand(args, parser, "sessions")
        held = ladder.q_max if ladder else args.held_sessions
        if args.chars_per_session_s is not None:
            chars, how = args.chars_per_session_s, "given with --chars-per-session-s"
        elif ladder is not None and ladder.chars_per_session_s:
            chars, how = ladder.chars_per_session_s, f"the session ladder's ({ladder.path})"
        else:
            chars, how = default_chars_per_session_s()
        curve = ladder.curve if ladder else None
        return plan_sessions(needs, peak, trough, held, chars_per_session_s=chars, chars_how=how, curve=curve,
                             ladder=ladder)
    peak, trough = _demand(args, parser, "rps")
    if ladder is not None:
        chars = args.chars_per_request or ladder.chars_per_request
        p95 = ladder.service_p95_ms if ladder.service_p95_ms is not None else ladder.rungs[0].p95_ms
        rps = ladder.rps_at_q_max or ladder.curve.throughput(ladder.q_max)
        return plan_requests(needs, peak, trough, ladder.curve, q_max=ladder.q_max, rps_at_q_max=rps,
                             service_mean_ms=ladder.service_mean_ms, service_p95_ms=p95, chars_per_request=chars,
                             ladder=ladder)
    missing = [n for n, v in (("--qmax", args.qmax), ("--rps-at-qmax", args.rps_at_qmax),
                              ("--service-p95-ms", args.service_p95_ms)) if v is None]
    if missing:
        parser.error(f"the request form needs {', '.join(missing)}")
    mean = args.service_mean_ms if args.service_mean_ms is not None else args.service_p95_ms
    if mean > args.service_p95_ms:
        parser.error(f"--service-mean-ms {mean:g} is above --service-p95-ms {args.service_p95_ms:g}")
    curve = Curve.from_service(args.qmax, args.rps_at_qmax, mean, args.service_p95_ms)
    return plan_requests(needs, peak, trough, curve, q_max=args.qmax, rps_at_q_max=args.rps_at_qmax,
                         service_mean_ms=mean, service_p95_ms=args.service_p95_ms,
                         chars_per_request=args.chars_per_request, assumed=True)


def _demand(args: argparse.Namespace, parser: exit_codes.Parser, unit: str) -> tuple[float, float]:
    peak, trough = getattr(args, f"peak_{unit}"), getattr(args, f"trough_{unit}")
    if peak is None or trough is None:
        parser.error(f"give the demand: --peak-{unit} P --trough-{unit} Q")
    if peak < trough:
        parser.error(f"--peak-{unit} {peak:g} is below --trough-{unit} {trough:g}")
    if peak <= 0:
        parser.error(f"--peak-{unit} must be > 0")
    return peak, trough


def _checked(args: argparse.Namespace, parser: exit_codes.Parser, plan: Sizing,
             found: list[Finding]) -> tuple[Sizing, list[Finding], dict[str, Any]]:
    """The plan replayed on the trace, its floor raised until it passes; the plan to print, its findings,
    its JSON (with the simulation's verdicts under "simulation")."""
    data = plan_json(plan, found)
    if args.trace == NO_TRACE or plan.min_instances is None or plan.max_instances is None:
        return plan, found, data
    try:
        trace = trace_for(args.trace, data, args.surge_start_s)
    except PlanFileError as exc:
        parser.error(str(exc))

    def plan_for_floor(floor: int) -> dict[str, Any]:
        raised = make_plan(argparse.Namespace(**{**vars(args), "min_floor": floor}), parser)
        return plan_json(raised, findings(raised))

    print(f"simulating the plan on {trace.name} (a simulation, not a measurement)...", file=sys.stderr, flush=True)
    check = self_check(plan_for_floor, data, trace, ReplayOptions(statistic="Average"),
                       lambda line: print(line, file=sys.stderr, flush=True))
    if check.passing_min is not None and check.passing_min != check.printed_min:
        plan = make_plan(argparse.Namespace(**{**vars(args), "min_floor": check.passing_min}), parser)
        found = findings(plan)
    found = [*found, simulation_finding(check)]
    data = plan_json(plan, found)
    data["simulation"] = check.as_dict()
    return plan, found, data


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    plan = make_plan(args, parser)
    plan, found, data = _checked(args, parser, plan, findings(plan))
    print(render(plan, found))
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"{parser.prog}: error: cannot write --json {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return exit_codes.USAGE
    return exit_codes.BROKEN if has_stop(found) else exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
