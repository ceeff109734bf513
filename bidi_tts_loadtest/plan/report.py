"""The plan as people read it (a block of text) and as tools read it (the JSON the deploy tool and the
fleet simulation load: the pinned keys, then what the simulation replays against)."""

from __future__ import annotations

from typing import Any

from bidi_tts_loadtest.plan.findings import Finding
from bidi_tts_loadtest.plan.size import Sizing


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def plan_json(plan: Sizing, found: list[Finding]) -> dict[str, Any]:
    p = plan.requirements
    # null, not [], where nothing was measured: the fleet simulation then asks for a curve of its own
    curve = None if plan.curve is None else [[r.level, r.rps, r.p50_ms, r.p95_ms] for r in plan.curve.rungs]
    ladder = plan.ladder
    source: dict[str, Any] = {
        "capacity": ("ladder" if ladder else "hand-given"),
        "ladder": None if ladder is None else {"path": ladder.path, "load": ladder.load, "loop": ladder.loop,
                                               "runs": ladder.runs, "bracketed": ladder.bracketed,
                                               "slo_ms": ladder.slo_ms, "q_max_per_run": list(ladder.q_max_per_run)},
        "curve_assumed": plan.curve_assumed,
        "price": p.price.source,
        "region": p.region,
        "chars_per_session_s": plan.chars_per_session_s_how,
        "min_floor": p.min_floor,
        "quota": p.quota,
    }
    return {
        "min_instances": plan.min_instances,
        "max_instances": plan.max_instances,
        "target_value": _r(plan.target_value),
        "scale_in_value": _r(plan.scale_in_value),
        "scale_out_cooldown_s": plan.scale_out_cooldown_s,
        "scale_in_cooldown_s": plan.scale_in_cooldown_s,
        "cost_per_hour_peak": _r(plan.cost_per_hour_peak),
        "cost_per_million_chars_peak": _r(plan.cost_per_million_chars_peak, 6),
        "findings": [f.as_dict() for f in found],
        "metric": "SageMakerVariantConcurrentRequestsPerModelHighResolution",
        "load": plan.load,
        "slo_ms": p.slo_ms,
        "surge": p.surge,
        "scale_out_s": p.scale_out_s,
        "instance_type": p.instance_type,
        "price_per_hour": p.price.usd_per_hour,
        "per_instance": {
            "q_max": plan.q_max,
            "rps_at_q_max": plan.rps_at_q_max,
            "service_p95_ms": plan.service_p95_ms,
            "service_mean_ms": plan.service_mean_ms,
            "lambda_star": _r(plan.lambda_star),
            "lambda_target": _r(plan.lambda_target),
            "held_sessions": plan.held_sessions,
            "slo_edge_level": plan.slo_edge_level,
            "curve": curve,
            "at_target": {k: _r(v, 6) for k, v in plan.at_target.items()},
        },
        "queue_bound": plan.queue_bound,
        "peak": plan.peak,
        "trough": plan.trough,
        "chars_per_request": plan.chars_per_request,
        "chars_per_session_s": _r(plan.chars_per_session_s),
        "cost_per_hour_trough": _r(plan.cost_per_hour_trough),
        "cost_per_million_chars_trough": _r(plan.cost_per_million_chars_trough, 6),
        "throughput_floor": plan.throughput_floor,
        "trough_capacity": _r(plan.trough_capacity),
        "uncontended_figure": plan.uncontended_figure,
        "source": source,
    }


def _money(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"${v:,.{digits}f}"


def render(plan: Sizing, found: list[Finding]) -> str:
    p = plan.requirements
    unit = "rps" if plan.load == "request" else "sessions"
    lines = [f"Fleet plan: {plan.load} load on {p.instance_type} ({p.price.usd_per_hour:g} USD/h, {p.price.source})",
             "", "Inputs:",
             f"  demand           peak {plan.peak:g} {unit}, trough {plan.trough:g} {unit}",
             f"  SLO              p95 time to first audio <= {p.slo_ms:g} ms",
             f"  surge            {p.surge:g}x within the scale-out time {p.scale_out_s:g} s",
             f"  min floor        {p.min_floor}" + ("" if p.quota is None else f", quota {p.quota}")]
    if plan.load == "request":
        src = f"ladder {plan.ladder.path}" if plan.ladder else "hand-given (curve assumed)"
        mean = "n/a" if plan.service_mean_ms is None else f"{plan.service_mean_ms:.1f}"
        lines += [f"  per instance     Q_max {plan.q_max:g}, R {plan.rps_at_q_max:.2f} rps at Q_max, S mean "
                  f"{mean} ms / p95 {plan.service_p95_ms:.1f} ms ({src})",
                  "  chars/request    " + ("not given: the cost per character is left out"
                                           if plan.chars_per_request is None else f"{plan.chars_per_request:.1f}")]
    else:
        src = f"ladder {plan.ladder.path}" if plan.ladder else "given"
        lines += [f"  per instance     H {plan.held_sessions:g} sessions held at the SLO ({src})",
                  f"  chars/session-s  {plan.chars_per_session_s:.2f} ({plan.chars_per_session_s_how})"]
    lines += ["", "Derived (a queueing model on the measured curve: memoryless service, so it errs on the safe side):"
              if plan.load == "request" else "Derived:"]
    n = plan.min_instances or 0
    if plan.load == "request" and plan.lambda_target is not None:
        at = plan.at_target
        lines += [
            f"  lambda*          {plan.lambda_star:.2f} rps: largest Poisson arrival rate whose p95 TTFA meets "
            f"the SLO ({at['ttfa_p95_at_lambda_star_ms']:.0f} ms there)",
            f"  lambda_target    {plan.lambda_star:.2f} / {p.surge:g} = {plan.lambda_target:.2f} rps an instance "
            f"(p95 TTFA {at['ttfa_p95_ms']:.0f} ms)",
            f"  max_instances    ceil({plan.peak:g} / {plan.lambda_target:.2f}) = {plan.max_instances} "
            f"(throughput floor ceil({plan.peak:g} / {plan.rps_at_q_max:.2f}) = {plan.throughput_floor})",
            f"  min_instances    max({p.min_floor}, ceil({plan.trough:g} / {plan.lambda_target:.2f})) = "
            f"{plan.min_instances}",
            f"  target_value     L per instance at lambda_target in {plan.max_instances} instances routed by least "
            f"outstanding requests = {plan.target_value:.2f} requests in flight (one instance alone: L = lambda x W"
            f" = {plan.lambda_target:.2f} x {at['time_in_system_s'] * 1000:.0f} ms = "
            f"{at['in_flight_single_instance']:.2f})",
            f"  scale_in_value   L at {n}/{n + 1} of lambda_target, read the same way = "
            f"{plan.scale_in_value:.2f}",
        ]
    elif plan.load == "session" and plan.target_value is not None:
        lines += [
            f"  target_value     H / surge = {plan.held_sessions:g} / {p.surge:g} = {plan.target_value:.2f} sessions",
            f"  max_instances    ceil({plan.peak:g} / {plan.target_value:.2f}) = {plan.max_instances}",
            f"  min_instances    max({p.min_floor}, ceil({plan.trough:g} / {plan.target_value:.2f})) = "
            f"{plan.min_instances}",
            f"  scale_in_value   target x N/(N+1) = {plan.target_value:.2f} x {n}/{n + 1} = "
            f"{plan.scale_in_value:.2f}",
        ]
    else:
        lines.append("  no capacity meets the SLO: see the findings")
    if plan.trough_capacity is not None:
        per = plan.lambda_star if plan.load == "request" else plan.held_sessions
        growth = f", {plan.trough_capacity / plan.trough:.1f}x the trough" if plan.trough > 0 else ""
        lines.append(f"  trough fleet     {plan.min_instances} x {per:.2f} = {plan.trough_capacity:.1f} {unit} at the "
                     f"SLO until new capacity serves, {p.scale_out_s:g} s after the decision{growth}")
    lines += [f"  cooldowns        out clamp({p.scale_out_s:g} / 2, 60, 300) = {plan.scale_out_cooldown_s} s, "
              f"in max({p.scale_out_s:g}, 300) = {plan.scale_in_cooldown_s} s",
              f"  cost             peak {_money(plan.cost_per_hour_peak)}/h, "
              f"{_money(plan.cost_per_million_chars_peak, 4)} per million chars; trough "
              f"{_money(plan.cost_per_hour_trough)}/h, {_money(plan.cost_per_million_chars_trough, 4)} per million"
              " chars",
              "", "Deploy:",
              f"  min_instances {plan.min_instances}  max_instances {plan.max_instances}  target_value "
              f"{'n/a' if plan.target_value is None else round(plan.target_value, 2)} on "
              "SageMakerVariantConcurrentRequestsPerModelHighResolution",
              f"  scale_in_value {'n/a' if plan.scale_in_value is None else round(plan.scale_in_value, 2)}  "
              f"cooldowns out {plan.scale_out_cooldown_s} s / in {plan.scale_in_cooldown_s} s  queue bound "
              f"{plan.queue_bound} " + ("(--max-queue)" if plan.load == "request" else "sessions"),
              "", "Findings:"]
    lines += [f"  {f.level:<4} {f.name}: {f.detail}" for f in found] or ["  none"]
    return "\n".join(lines)
