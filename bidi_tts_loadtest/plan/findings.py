"""What a person should know about a plan before deploying it: OK / WARN / STOP, each with what to do.

Each check looks at the plan it is given and fires only when its situation holds; a STOP means no fleet
of this plan meets the SLO (or the account cannot run it), and makes the command exit 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bidi_tts_loadtest.plan.self_check import SelfCheck
from bidi_tts_loadtest.plan.size import Sizing

OK, WARN, STOP = "OK", "WARN", "STOP"
#: The predefined high-resolution metric the policy tracks (CloudWatch ConcurrentRequestsPerModel, 10 s).
METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"


@dataclass(frozen=True)
class Finding:
    level: str
    name: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"level": self.level, "name": self.name, "detail": self.detail}


def service_over_slo(plan: Sizing) -> Finding | None:
    if plan.load != "request" or plan.lambda_star is None or plan.lambda_star > 0:
        return None
    return Finding(STOP, "service_p95_over_slo",
                   f"one request alone takes p95 {plan.service_p95_ms:g} ms against the "
                   f"{plan.requirements.slo_ms:g} ms SLO: no number of instances fixes it; make a request "
                   "faster (shorter texts, a faster "
                   "instance, streaming the first clause) or relax the SLO")


def held_none(plan: Sizing) -> Finding | None:
    if plan.load != "session" or plan.held_sessions is None or plan.held_sessions >= 1:
        return None
    return Finding(STOP, "held_none",
                   f"an instance holds {plan.held_sessions:g} sessions at the SLO: no fleet of it meets the SLO; "
                   "find a configuration that holds one (docs/capacity.md) or relax the SLO")


def over_quota(plan: Sizing) -> Finding | None:
    quota = plan.requirements.quota
    if quota is None or plan.max_instances is None or plan.max_instances <= quota:
        return None
    return Finding(STOP, "over_quota",
                   f"max_instances {plan.max_instances} exceeds the account's quota of {quota} "
                   f"{plan.requirements.instance_type} instances: ask for a quota increase, or plan a larger "
                   "instance type")


def qmax_lower_bound(plan: Sizing) -> Finding | None:
    if plan.ladder is None or plan.ladder.bracketed:
        return None
    return Finding(WARN, "qmax_lower_bound",
                   f"the ladder never reached a level that misses the SLO, so Q_max {plan.ladder.q_max:g} is a "
                   "lower bound and the curve past it is extrapolated flat: run the ladder to a failing level")


def single_run(plan: Sizing) -> Finding | None:
    if plan.ladder is None or plan.ladder.runs > 1:
        return None
    return Finding(WARN, "single_run",
                   "the ladder is one run: no spread, so nothing says how much Q_max and the rates move "
                   "between runs; repeat it (the ladder's runs option) before trusting the last instance")


def curve_assumed(plan: Sizing) -> Finding | None:
    if not plan.curve_assumed:
        return None
    return Finding(WARN, "curve_assumed",
                   "capacity was given by hand, so the curve is assumed: X(n) = min(n / S_mean, R), latency "
                   "max(S_mean, n / R) plus the uncontended p95-mean spread; a ladder (--ladder) measures it")


def slo_differs(plan: Sizing) -> Finding | None:
    ladder = plan.ladder
    if ladder is None or ladder.slo_ms is None or ladder.slo_ms == plan.requirements.slo_ms:
        return None
    judged = f"the ladder judged its levels against {ladder.slo_ms:g} ms, the plan uses {plan.requirements.slo_ms:g} ms"
    if plan.load == "request":  # lambda* and the queue bound come from the curve at the plan's SLO
        return Finding(WARN, "slo_differs_from_ladder",
                       f"{judged}: lambda* and the queue bound {plan.queue_bound} are read from the curve at the "
                       "plan's SLO; re-run the ladder at it to measure Q_max there")
    if plan.requirements.slo_ms < ladder.slo_ms:  # H, held at a looser SLO, overstates what an instance holds
        return Finding(STOP, "slo_differs_from_ladder",
                       f"{judged}: H = {plan.held_sessions:g} sessions was held at the looser SLO and overstates "
                       "what an instance holds at this one; re-run the session ladder at the plan's SLO")
    return Finding(WARN, "slo_differs_from_ladder",
                   f"{judged}: H = {plan.held_sessions:g} sessions was held at a stricter SLO, so the fleet is "
                   "larger than this SLO needs; re-run the session ladder at the plan's SLO")


def min_one(plan: Sizing) -> Finding | None:
    if plan.min_instances != 1:
        return None
    return Finding(WARN, "min_one_instance",
                   "min_instances is 1: one instance is one Availability Zone and no failover; AWS advises "
                   "two or more instances for availability (--min-floor 2)")


def surge_headroom(plan: Sizing) -> Finding | None:
    surge = plan.requirements.surge
    if surge < 1.5:
        return None
    return Finding(WARN, "surge_headroom",
                   f"a surge of {surge:g}x within the {plan.requirements.scale_out_s:g} s scale-out time must be "
                   f"standing headroom: {1 - 1 / surge:.0%} of the fleet idles to carry it; shortening the "
                   "scale-out time (a smaller image, a faster start) costs less than that headroom")


def queue_rejects(plan: Sizing) -> Finding | None:
    share = plan.at_target.get("share_finding_queue_full")
    if plan.load != "request" or share is None or share <= 0.001:
        return None
    edge = plan.slo_edge_level
    fix = (f"raise --max-queue to {edge}, where the curve (interpolated) still meets the SLO, or measure the "
           "levels between Q_max and the first that fails" if edge is not None and plan.queue_bound is not None
           and edge > plan.queue_bound else "lower the target (a larger --surge)")
    return Finding(WARN, "queue_rejects_at_target",
                   f"at the target load {share:.2%} of arrivals find {plan.queue_bound} in system (the queue "
                   f"bound) and are answered busy: {fix}")


def sized_from_throughput(plan: Sizing) -> Finding | None:
    if plan.load != "request" or plan.lambda_target is None:
        return None
    floor, wrong = plan.throughput_floor, plan.uncontended_figure
    side = "" if wrong is None else (
        f"; sizing from the uncontended service time, ceil(peak x S / target) = ceil({plan.peak:g} x "
        f"{plan.service_mean_ms:.1f} ms / {plan.target_value:.2f}), would give {wrong}")
    # the AWS sample's own target, 0.75 x Q_max
    if wrong is not None and plan.q_max and plan.service_mean_ms is not None:
        sample = math.ceil(plan.peak * plan.service_mean_ms / 1000 / (0.75 * plan.q_max) - 1e-9)
        side += f", and with the target 0.75 x Q_max = {0.75 * plan.q_max:g}, {sample}"
    return Finding(OK, "sized_from_throughput",
                   f"max_instances {plan.max_instances} from lambda* {plan.lambda_star:.2f} rps / surge "
                   f"{plan.requirements.surge:g} = {plan.lambda_target:.2f} rps an instance; the throughput floor "
                   f"ceil(peak / R) = ceil({plan.peak:g} / {plan.rps_at_q_max:.2f}) = {floor}{side}")


def target_in_concurrency(plan: Sizing) -> Finding | None:
    if plan.load != "request" or plan.target_value is None:
        return None
    w = plan.at_target["time_in_system_s"]
    return Finding(OK, "target_in_concurrency",
                   f"target_value {plan.target_value:.2f} is requests in flight at an instance (queued + "
                   f"executing), {METRIC}'s unit, read on a fleet of {plan.max_instances} routed by least "
                   "outstanding requests, which pools the instances (one instance alone would hold L = lambda x W "
                   f"= {plan.lambda_target:.2f} x {w * 1000:.0f} ms = {plan.at_target['in_flight_single_instance']:.2f}"
                   ", W the time in system at that load, not S; a target that high is reached in a pooled fleet "
                   "only near saturation, so it scales out too late). A closed-loop ladder's client concurrency "
                   "equals the server's maximum only under closed loop (the sample measured 1.0); open "
                   f"arrivals vary: the 95th percentile in system at the target is "
                   f"{plan.at_target['in_system_p95']:g}, so a policy on the Maximum statistic scales out earlier")


def session_one_invocation(plan: Sizing) -> Finding | None:
    if plan.load != "session":
        return None
    return Finding(WARN, "session_counts_as_one_invocation",
                   "a bidirectional stream is one invocation in flight for its whole life, so it counts 1 in "
                   "ConcurrentRequestsPerModel while open: inferred, not documented (the developer guide says "
                   "streamed responses count until their last token); check the metric against a known "
                   "session count before trusting the target")


def sessions_do_not_move(plan: Sizing) -> Finding | None:
    if plan.load != "session":
        return None
    return Finding(WARN, "sessions_do_not_move",
                   "open sessions stay on their instance: a new instance takes only new sessions, so scale-out "
                   "relieves a hot instance by attrition as its sessions end; the surge headroom "
                   f"(held / target = {plan.requirements.surge:g}) must be standing, not added on demand")


def no_session_bound(plan: Sizing) -> Finding | None:
    if plan.load != "session":
        return None
    return Finding(WARN, "no_session_admission_bound",
                   f"the plan's queue bound is {plan.queue_bound} sessions an instance, but the reference "
                   "container has no session admission bound: --max-queue bounds messages waiting across "
                   "sessions, not sessions; past H sessions every session on the instance slows down")


def growth_from_trough(plan: Sizing) -> Finding | None:
    capacity = plan.trough_capacity
    if capacity is None or plan.min_instances is None or capacity >= plan.peak:
        return None
    unit = "rps" if plan.load == "request" else "sessions"
    scale_out_s = plan.requirements.scale_out_s
    rate = max(0.0, capacity - plan.trough) / scale_out_s
    return Finding(WARN, "growth_from_trough",
                   f"from the trough the {plan.min_instances} standing instances carry {capacity:.1f} {unit} at "
                   f"the SLO until new capacity serves, {scale_out_s:g} s after a decision: load may grow from "
                   f"{plan.trough:g} by about {rate:.3g} {unit} a second there, and by at most "
                   f"{plan.requirements.surge:g}x within the scale-out time anywhere; a steeper ramp outruns "
                   "target tracking, which adds "
                   "capacity one activity at a time: replay your ramp with python -m bidi_tts_loadtest.fleet_sim "
                   "and raise --min-floor (or schedule capacity before the ramp) until it passes")


def chars_unknown(plan: Sizing) -> Finding | None:
    if plan.load != "request" or plan.chars_per_request is not None:
        return None
    return Finding(WARN, "chars_per_request_unknown",
                   "no characters per request (--chars-per-request, or the ladder's chars_per_request): the "
                   "fleet is sized, but the cost per million characters is left out (null in the JSON)")


def simulation_finding(check: SelfCheck) -> Finding:
    """What the plan's own simulation said (not one of CHECKS: it judges a replay, not the plan's numbers)."""
    tries = ", ".join(f"min {v.min_instances} {v.verdict}" for v in check.verdicts)
    if check.why_not is not None and not check.verdicts:
        return Finding(WARN, "not_simulated", check.why_not)
    if check.passing_min is None:
        return Finding(STOP, "fails_its_simulation", f"on {check.trace} ({tries}): {check.why_not}")
    if check.passing_min == check.printed_min:
        return Finding(OK, "passes_its_simulation", f"the plan passes a simulation on {check.trace} (min "
                       f"{check.printed_min}): no window outside the surge window over the SLO, nothing refused")
    return Finding(WARN, "floor_raised_by_simulation",
                   f"the plan as sized (min {check.printed_min}) fails a simulation on {check.trace}; the floor is "
                   f"raised to {check.passing_min}, the smallest that passes ({tries}): the ramp outruns target "
                   "tracking from fewer standing instances")


CHECKS: tuple[Callable[[Sizing], Finding | None], ...] = (
    service_over_slo, held_none, over_quota, qmax_lower_bound, single_run, curve_assumed, slo_differs,
    min_one, surge_headroom, growth_from_trough, queue_rejects, sized_from_throughput, target_in_concurrency,
    session_one_invocation, sessions_do_not_move, no_session_bound, chars_unknown,
)

def findings(plan: Sizing) -> list[Finding]:
    return [f for f in (check(plan) for check in CHECKS) if f is not None]


def has_stop(found: list[Finding]) -> bool:
    return any(f.level == STOP for f in found)
