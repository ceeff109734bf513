"""From one instance's capacity and the demand to a fleet: instances, requirements values, queue bound, cost.

Request load sizes from lambda* (plan/model.py); session load from H, the sessions one instance holds at
the SLO. Both leave the surge as standing headroom: the target is the level at 1 / surge of capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bidi_tts.fleet_plan import Curve
from bidi_tts_loadtest.core.corpus import load_answers
from bidi_tts_loadtest.ladder.result_file import Ladder
from bidi_tts_loadtest.plan.model import (
    cooldowns,
    cost_per_million_chars,
    lambda_star,
    latency_p95_ms,
    lor_mean_in_system,
    occupancy,
    scale_in_level,
)
from bidi_tts_loadtest.plan.prices import Price

#: Audio seconds per character of the calibrated ONNX container (cpu-onnx-2core: 0.05871 s/token x 1.07
#: tokens/char); Kokoro's speech rate, not the machine's, so it holds on any instance.
AUDIO_S_PER_CHAR = 0.0628
#: The capacity sweep's pause between a turn heard out and the next (capacity_load.measure_step).
TURN_PAUSE_S = 1.0


def default_chars_per_session_s() -> tuple[float, str]:
    """Characters a session speaks per second of its life under the load test's LLM-paced corpus."""
    answers = load_answers()
    mean_chars = sum(len(a) for a in answers) / len(answers)
    turn_s = mean_chars * AUDIO_S_PER_CHAR + TURN_PAUSE_S
    how = (f"corpus mean {mean_chars:.1f} chars a turn / ({mean_chars:.1f} x {AUDIO_S_PER_CHAR} audio-s/char "
           f"+ {TURN_PAUSE_S:.1f} s pause) = {mean_chars / turn_s:.2f}: a listener hears each turn out, then "
           "answers (TTFA not counted)")
    return mean_chars / turn_s, how


@dataclass(frozen=True)
class Requirements:
    slo_ms: float
    scale_out_s: float
    surge: float
    min_floor: int
    quota: int | None
    instance_type: str
    region: str
    price: Price


@dataclass
class Sizing:
    """Everything the planner decided and why; the report and the JSON are views of it."""

    load: str  # "request" | "session"
    requirements: Requirements
    peak: float
    trough: float
    min_instances: int | None
    max_instances: int | None
    target_value: float | None
    scale_in_value: float | None
    scale_out_cooldown_s: int
    scale_in_cooldown_s: int
    queue_bound: int | None
    cost_per_hour_peak: float | None
    cost_per_hour_trough: float | None
    cost_per_million_chars_peak: float | None
    cost_per_million_chars_trough: float | None
    chars_per_request: float | None = None
    chars_per_session_s: float | None = None
    chars_per_session_s_how: str | None = None
    curve: Curve | None = None
    ladder: Ladder | None = None
    curve_assumed: bool = False
    q_max: float | None = None
    rps_at_q_max: float | None = None
    service_mean_ms: float | None = None
    service_p95_ms: float | None = None
    lambda_star: float | None = None
    lambda_target: float | None = None
    held_sessions: float | None = None
    throughput_floor: int | None = None
    uncontended_figure: int | None = None
    trough_capacity: float | None = None  # what min_instances serve at the SLO until new capacity arrives
    slo_edge_level: int | None = None  # the largest n in system whose p95 meets the SLO, read from the curve
    at_target: dict[str, float] = field(default_factory=dict)  # the chain at lambda_target


def _fleet(demand: float, per_instance: float, floor: int) -> int:
    return max(floor, math.ceil(demand / per_instance - 1e-9))


def request_fleet(peak_rps: float, lambda_target: float, throughput_floor: int, min_floor: int) -> int:
    """Instances for the peak: each takes lambda_target, and never fewer than the throughput floor."""
    return max(_fleet(peak_rps, lambda_target, 1), throughput_floor, min_floor)


def _costs(plan: Sizing, chars_per_hour_peak: float, chars_per_hour_trough: float) -> None:
    price = plan.requirements.price.usd_per_hour
    if plan.max_instances is None or plan.min_instances is None:
        return
    plan.cost_per_hour_peak = plan.max_instances * price
    plan.cost_per_hour_trough = plan.min_instances * price
    plan.cost_per_million_chars_peak = cost_per_million_chars(plan.cost_per_hour_peak, chars_per_hour_peak)
    plan.cost_per_million_chars_trough = cost_per_million_chars(plan.cost_per_hour_trough, chars_per_hour_trough)


def _empty(load: str, requirements: Requirements, peak: float, trough: float) -> Sizing:
    out, cin = cooldowns(requirements.scale_out_s)
    return Sizing(load, requirements, peak, trough, None, None, None, None, out, cin, None, None, None, None, None)


def plan_requests(requirements: Requirements, peak_rps: float, trough_rps: float, curve: Curve, *, q_max: float,
                  rps_at_q_max: float, service_mean_ms: float | None, service_p95_ms: float,
                  chars_per_request: float | None, ladder: Ladder | None = None,
                  assumed: bool = False) -> Sizing:
    plan = _empty("request", requirements, peak_rps, trough_rps)
    plan.curve, plan.ladder, plan.curve_assumed = curve, ladder, assumed
    plan.q_max, plan.rps_at_q_max = q_max, rps_at_q_max
    plan.service_mean_ms, plan.service_p95_ms = service_mean_ms, service_p95_ms
    plan.chars_per_request = chars_per_request
    same_slo = ladder is None or ladder.slo_ms is None or ladder.slo_ms == requirements.slo_ms
    plan.slo_edge_level = curve.largest_level_within(requirements.slo_ms)
    plan.queue_bound = int(q_max) if same_slo else plan.slo_edge_level
    rate = min(rps_at_q_max, curve.saturation_rps) if rps_at_q_max > 0 else curve.saturation_rps
    plan.throughput_floor = math.ceil(peak_rps / rate - 1e-9)
    star = 0.0 if service_p95_ms >= requirements.slo_ms else lambda_star(curve, requirements.slo_ms)
    plan.lambda_star = star
    if star <= 0:  # no arrival rate meets the SLO: only the throughput floor can be given
        plan.max_instances = max(plan.throughput_floor, requirements.min_floor)
        plan.min_instances = _fleet(trough_rps, rate, requirements.min_floor)
        _costs(plan, peak_rps * (chars_per_request or 0.0) * 3600, trough_rps * (chars_per_request or 0.0) * 3600)
        return plan
    target_rate = star / requirements.surge
    plan.lambda_target = target_rate
    occ = occupancy(curve, target_rate)
    plan.max_instances = request_fleet(peak_rps, target_rate, plan.throughput_floor, requirements.min_floor)
    # The metric is read on a fleet routed by least outstanding requests, which queues far less than
    # one instance alone at the same rate: the target is L per instance in the largest fleet (smaller
    # fleets queue more, so they reach it at a lower rate: earlier scale-out, the safe side).
    plan.target_value = lor_mean_in_system(curve, target_rate, plan.max_instances)
    plan.at_target = {
        "time_in_system_s": occ.time_in_system_s,
        "ttfa_p95_ms": latency_p95_ms(curve, occ),
        "in_system_p95": float(occ.in_system_quantile(0.95)),
        "share_finding_queue_full": occ.at_least(plan.queue_bound) if plan.queue_bound else 1.0,
        "ttfa_p95_at_lambda_star_ms": latency_p95_ms(curve, occupancy(curve, star)),
    }
    plan.min_instances = min(_fleet(trough_rps, target_rate, requirements.min_floor), plan.max_instances)
    # N survivors take N + 1 instances' arrivals; in concurrency units that is L at the lower rate
    # (read like the target, in the largest fleet), which (L convex in lambda) lies at or under
    # target x N / (N + 1).
    plan.trough_capacity = plan.min_instances * star
    survivors = plan.min_instances
    plan.scale_in_value = lor_mean_in_system(curve, target_rate * survivors / (survivors + 1), plan.max_instances)
    plan.at_target["in_flight_single_instance"] = occ.mean_in_system
    if service_mean_ms is not None:
        # The sample's rule: instances = peak x S / (concurrency target), S the uncontended service time.
        plan.uncontended_figure = math.ceil(peak_rps * service_mean_ms / 1000.0 / plan.target_value - 1e-9)
    _costs(plan, peak_rps * (chars_per_request or 0.0) * 3600, trough_rps * (chars_per_request or 0.0) * 3600)
    return plan


def plan_sessions(requirements: Requirements, peak_sessions: float, trough_sessions: float, held: float, *,
                  chars_per_session_s: float, chars_how: str, curve: Curve | None = None,
                  ladder: Ladder | None = None) -> Sizing:
    plan = _empty("session", requirements, peak_sessions, trough_sessions)
    plan.curve, plan.ladder, plan.held_sessions = curve, ladder, held
    plan.chars_per_session_s, plan.chars_per_session_s_how = chars_per_session_s, chars_how
    if held < 1:
        return plan
    plan.queue_bound = math.floor(held)
    target = held / requirements.surge
    plan.target_value = target
    plan.max_instances = max(_fleet(peak_sessions, target, 1), requirements.min_floor)
    plan.min_instances = min(_fleet(trough_sessions, target, requirements.min_floor), plan.max_instances)
    plan.scale_in_value = scale_in_level(target, plan.min_instances)
    plan.trough_capacity = plan.min_instances * held
    _costs(plan, peak_sessions * chars_per_session_s * 3600, trough_sessions * chars_per_session_s * 3600)
    return plan
