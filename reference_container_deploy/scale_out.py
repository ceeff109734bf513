"""Scale-out time from what was observed: the stages of one added instance, computed from timestamps.

No clocks and no AWS here: :mod:`reference_container_deploy.scale_out_run` records what it saw (log
events of the endpoint's log group, DescribeEndpoint answers, the probe's first-audio times), all in
seconds since the epoch, and this module says when each stage was reached, relative to the moment
`UpdateEndpointWeightsAndCapacities` was accepted. That keeps the rules testable on recorded
timestamps, which is all moto (InService at once, no logs) lets us test end to end.

Stages, in the order they normally come:
- `first_log`: the first line on a log stream that did not exist before the update (SageMaker writes
  one stream per instance, `AllTraffic/i-...`): the new instance's container has started.
- `container_ready`: the first `event=ready` line on such a stream (the reference container logs it
  once its model is loaded and `/ping` answers 200).
- `in_service`: DescribeEndpoint says InService with CurrentInstanceCount at the new count.
- `traffic_recovered`: from `in_service` on, the first moment the probe's p95 first-audio time over
  the trailing window (of messages since `in_service` only) is at or under the threshold, with
  enough messages and no failed one in that window.

The planner's figure (`scale_out_s`) is `in_service`: the time from the decision to more capacity
serving. It leaves out what comes before the update in a real scale-out, the metric and alarm delay
of Application Auto Scaling; the JSON says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

READY_MARK = "event=ready"
STAGES = ("first_log", "container_ready", "in_service", "traffic_recovered")
EXCLUDES = ("the time before the capacity update: CloudWatch metric delay and the alarm evaluation of "
            "Application Auto Scaling")


@dataclass(frozen=True, slots=True)
class LogEvent:
    stream: str
    at: float
    message: str


@dataclass(frozen=True, slots=True)
class Status:
    at: float
    endpoint_status: str
    current_instances: int | None


@dataclass(frozen=True, slots=True)
class ProbeSample:
    at: float  # when the message's first audio arrived (or it failed)
    first_audio_ms: float | None  # None: the message failed


@dataclass(slots=True)
class Observations:
    """Everything recorded during one measurement."""

    started_at: float  # UpdateEndpointWeightsAndCapacities accepted
    target_count: int
    streams_before: frozenset[str] = frozenset()
    logs: list[LogEvent] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)
    probes: list[ProbeSample] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Recovery:
    """When the probe counts as recovered: p95 over the trailing window at or under the threshold."""

    p95_ms: float = 1000.0
    window_s: float = 30.0
    min_samples: int = 3


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    at_s: float | None  # seconds after the update; None: not observed
    detail: str

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "at_s": None if self.at_s is None else round(self.at_s, 3),
                "detail": self.detail}


def p95(values: Sequence[float]) -> float:
    """Nearest-rank 95th percentile (of a non-empty sequence)."""
    ordered = sorted(values)
    rank = max(1, -(-95 * len(ordered) // 100))  # ceil(0.95 n)
    return ordered[rank - 1]


def _new_stream_events(obs: Observations) -> list[LogEvent]:
    return sorted((e for e in obs.logs if e.stream not in obs.streams_before and e.at >= obs.started_at),
                  key=lambda e: e.at)


def _first_log(obs: Observations) -> Stage:
    events = _new_stream_events(obs)
    if not events:
        return Stage("first_log", None, "no line on a new log stream")
    return Stage("first_log", events[0].at - obs.started_at, f"first line on new stream {events[0].stream}")


def _ready(obs: Observations) -> Stage:
    for event in _new_stream_events(obs):
        if READY_MARK in event.message:
            return Stage("container_ready", event.at - obs.started_at, f"{READY_MARK} on {event.stream}")
    return Stage("container_ready", None, f"no {READY_MARK} line on a new log stream")


def _in_service(obs: Observations) -> Stage:
    for status in sorted(obs.statuses, key=lambda s: s.at):
        if (status.at >= obs.started_at and status.endpoint_status == "InService"
                and (status.current_instances or 0) >= obs.target_count):
            return Stage("in_service", status.at - obs.started_at,
                         f"InService with {status.current_instances} instance(s)")
    last = max(obs.statuses, key=lambda s: s.at, default=None)
    seen = f"last seen {last.endpoint_status} with {last.current_instances}" if last else "never described"
    return Stage("in_service", None, f"not InService at {obs.target_count} instance(s) ({seen})")


def _recovered(obs: Observations, since_s: float | None, rule: Recovery) -> Stage:
    if since_s is None:
        return Stage("traffic_recovered", None, "the new instance never came into service")
    if not obs.probes:
        return Stage("traffic_recovered", None, "no probe (not measured)")
    since = obs.started_at + since_s
    samples = sorted(obs.probes, key=lambda p: p.at)
    for sample in samples:
        if sample.at < since:
            continue
        # Only messages answered since InService: the baseline before the update says nothing of the new fleet.
        window = [p for p in samples if max(since, sample.at - rule.window_s) <= p.at <= sample.at]
        times = [p.first_audio_ms for p in window if p.first_audio_ms is not None]
        if len(times) < len(window) or len(times) < rule.min_samples:
            continue
        value = p95(times)
        if value <= rule.p95_ms:
            return Stage("traffic_recovered", sample.at - obs.started_at,
                         f"probe p95 {value:.0f} ms over the last {rule.window_s:g} s "
                         f"({len(times)} messages) <= {rule.p95_ms:g} ms")
    return Stage("traffic_recovered", None,
                 f"probe p95 never at or under {rule.p95_ms:g} ms after InService")


def stages(obs: Observations, rule: Recovery) -> list[Stage]:
    """The four stages, each reached or not, in STAGES order."""
    in_service = _in_service(obs)
    return [_first_log(obs), _ready(obs), in_service, _recovered(obs, in_service.at_s, rule)]


def result(obs: Observations, rule: Recovery, *, endpoint: str, from_count: int,
           notes: Iterable[str] = ()) -> dict[str, object]:
    """The JSON `--scale-out-s` writes: the planner reads `scale_out_s`."""
    found = stages(obs, rule)
    in_service = next(s for s in found if s.name == "in_service")
    return {
        "scale_out_s": None if in_service.at_s is None else round(in_service.at_s, 3),
        "stages": [s.as_json() for s in found],
        "endpoint": endpoint,
        "from_instances": from_count,
        "to_instances": obs.target_count,
        "started_at_epoch_s": round(obs.started_at, 3),
        "recovery": {"p95_ms": rule.p95_ms, "window_s": rule.window_s, "min_samples": rule.min_samples},
        "probe_messages": len(obs.probes),
        "probe_failures": sum(1 for p in obs.probes if p.first_audio_ms is None),
        "excludes": EXCLUDES,
        "source": "measured: UpdateEndpointWeightsAndCapacities on the endpoint named, stages as observed",
        "notes": list(notes),
    }
