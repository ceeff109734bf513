"""`scale-out-time`: add one instance to a running endpoint under a small load and time the stages.

It holds the probe's load (:mod:`reference_container_deploy.scale_out_probe`), raises the variant's
desired instance count by one with `UpdateEndpointWeightsAndCapacities`, and polls DescribeEndpoint,
the endpoint's CloudWatch log group and the probe until every stage is seen (or `--timeout`); then,
in a `finally` that Ctrl-C also reaches, it sets the count back. Stage rules:
:mod:`reference_container_deploy.scale_out`.

Log events carry the time the container wrote them, so the log stages do not include CloudWatch's
ingestion lag; they are compared with this machine's clock, which must be roughly right (NTP).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from reference_container_deploy import autoscale as scaling
from reference_container_deploy.aws import ApiCall, Aws, is_not_found
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.names import VARIANT_NAME, DeploymentNames, derive_names
from reference_container_deploy.plan import describe_endpoint
from reference_container_deploy.scale_out import (
    LogEvent,
    Observations,
    ProbeSample,
    Recovery,
    Stage,
    Status,
    result,
    stages,
)

Printer = Callable[[str], None]
PROGRESS_S = 30.0  # a line at least this often while nothing changes
MAX_LOG_PAGES = 20  # per poll; a new instance writes a few dozen lines while it starts


class Probe(Protocol):
    @property
    def samples(self) -> list[ProbeSample]: ...

    def start(self) -> None: ...

    def stop(self, timeout_s: float = 10.0) -> None: ...


@dataclass(frozen=True, slots=True)
class ScaleOutOptions:
    name: str
    region: str | None = None
    json_path: Path | None = None
    recovery: Recovery = field(default_factory=Recovery)
    warmup_s: float = 10.0  # probe load before the update, for a baseline
    timeout_s: float = 1800.0
    poll_s: float = 5.0
    log_grace_s: float = 120.0  # after InService, how long to wait for log lines still missing
    restore_timeout_s: float = 1800.0  # wait for the update to settle before setting the count back

    def validate(self) -> None:
        for label, value in (("--timeout", self.timeout_s), ("--poll-interval", self.poll_s),
                             ("--window", self.recovery.window_s), ("--p95-ms", self.recovery.p95_ms)):
            if not value > 0:
                raise DeployError(ExitCode.USAGE, f"{label} {value} must be positive.")
        if self.warmup_s < 0 or self.log_grace_s < 0:
            raise DeployError(ExitCode.USAGE, "--warmup and --log-grace must be at least 0.")


@dataclass(frozen=True, slots=True)
class Clock:
    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep


def update_call(names: DeploymentNames, count: int) -> ApiCall:
    return ApiCall("sagemaker", "UpdateEndpointWeightsAndCapacities", {
        "EndpointName": names.endpoint,
        "DesiredWeightsAndCapacities": [{"VariantName": VARIANT_NAME, "DesiredInstanceCount": count}],
    })


def _variant(description: dict[str, Any]) -> dict[str, Any]:
    for variant in description.get("ProductionVariants", []):
        if variant.get("VariantName") == VARIANT_NAME:
            return dict(variant)
    return {}


def _count(description: dict[str, Any]) -> int | None:
    value = _variant(description).get("CurrentInstanceCount")
    return int(value) if isinstance(value, int) else None


class LogWatch:
    """The endpoint's log group: the streams there before the update, and the lines of every stream since.

    Only new streams are read (an old instance logs every probe message, which would otherwise be
    fetched again and again), each from its head and then on from its forward token.
    """

    def __init__(self, aws: Aws, group: str) -> None:
        self._aws, self.group = aws, group
        self.visible = True
        self._before: frozenset[str] = frozenset()
        self._tokens: dict[str, str | None] = {}  # new stream -> forward token (None: read from head)

    def _call(self, operation: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The call's answer; None when the group (or stream) does not exist (yet)."""
        try:
            return self._aws.call(ApiCall("logs", operation, {"logGroupName": self.group, **params}))
        except DeployError as exc:
            if exc.__cause__ is not None and is_not_found(exc.__cause__):
                return None
            raise

    def _stream_names(self, pages: int) -> set[str] | None:
        found: set[str] = set()
        token: str | None = None
        for _ in range(pages):
            page = self._call("DescribeLogStreams", {"orderBy": "LastEventTime", "descending": True,
                                                      **({"nextToken": token} if token else {})})
            if page is None:
                return None
            found |= {str(s["logStreamName"]) for s in page.get("logStreams", [])}
            token = page.get("nextToken")
            if not token:
                break
        return found

    def streams(self) -> frozenset[str]:
        """Every stream there now (call once, before the update); marks the group invisible when absent."""
        names = self._stream_names(MAX_LOG_PAGES)
        self.visible = names is not None
        self._before = frozenset(names or ())
        return self._before

    def new_events(self) -> list[LogEvent]:
        """Lines written since the last call on streams that were not there before."""
        if not self.visible:
            return []
        # The most recently written streams come first, and a starting instance's is among them.
        for name in (self._stream_names(1) or set()) - self._before:
            self._tokens.setdefault(name, None)
        events: list[LogEvent] = []
        for name, token in list(self._tokens.items()):
            for _ in range(MAX_LOG_PAGES):
                page = self._call("GetLogEvents", {"logStreamName": name, "startFromHead": True,
                                                   **({"nextToken": token} if token else {})})
                if page is None:
                    break
                events += [LogEvent(name, float(e["timestamp"]) / 1000.0, str(e.get("message", "")))
                           for e in page.get("events", [])]
                following = page.get("nextForwardToken")
                if not following or following == token:  # the same token back: nothing more yet
                    break
                token = following
            self._tokens[name] = token
        return events


def run_scale_out(
    opts: ScaleOutOptions,
    out: Printer = print,
    aws_factory: Callable[[str | None], Aws] = Aws,
    probe_factory: Callable[[str], Probe] | None = None,
    clock: Clock = Clock(),
) -> dict[str, object]:
    """Measure; return (and write, with `json_path`) the result. Raises DeployError with the exit code."""
    opts.validate()
    names = derive_names(opts.name)
    aws = aws_factory(opts.region)
    description = aws.call(describe_endpoint(names))
    if description.get("EndpointStatus") != "InService":
        raise DeployError(ExitCode.USAGE, f"endpoint {names.endpoint} is {description.get('EndpointStatus')}; "
                          "scale-out time is measured from InService.", "wait for InService, then run it again.")
    current = _count(description)
    if current is None:
        raise DeployError(ExitCode.AWS_ERROR, f"endpoint {names.endpoint} has no {VARIANT_NAME} variant with a "
                          "CurrentInstanceCount.", None)
    target = current + 1
    notes = _autoscaling_notes(aws, names, target)
    logs = LogWatch(aws, names.log_group)
    before = logs.streams()
    if not logs.visible:
        notes.append(f"log group {names.log_group} does not exist: first_log and container_ready cannot be seen")
    probe = probe_factory(names.endpoint) if probe_factory else None
    if probe is None:
        notes.append("no probe: traffic_recovered not measured")
    obs = Observations(started_at=clock.now(), target_count=target, streams_before=before)
    interrupted = updated = False
    try:
        if probe is not None:
            probe.start()
            out(f"probe running; {opts.warmup_s:g} s of baseline before the update")
            clock.sleep(opts.warmup_s)
        obs.started_at = clock.now()
        aws.call(update_call(names, target))
        updated = True
        out(f"raised {names.endpoint}/{VARIANT_NAME} from {current} to {target} instance(s); watching "
            f"(up to {opts.timeout_s:g} s)")
        _watch(aws, names, obs, logs, probe, opts, out, clock)
    except KeyboardInterrupt:
        interrupted = True
        out("interrupted; setting the instance count back")
    finally:
        if probe is not None:
            probe.stop()
            obs.probes = probe.samples
        if updated:
            _restore(aws, names, current, opts, out, clock)
    measured = result(obs, opts.recovery, endpoint=names.endpoint, from_count=current, notes=notes)
    for note in notes:
        out(f"note: {note}")
    if opts.json_path is not None:
        opts.json_path.write_text(json.dumps(measured, indent=2) + "\n", encoding="utf-8")
        out(f"wrote {opts.json_path}")
    if interrupted:
        raise DeployError(ExitCode.INTERRUPTED, "interrupted; the instance count was set back.", None)
    if measured["scale_out_s"] is None:
        raise DeployError(ExitCode.TIMEOUT, f"{names.endpoint} did not reach InService at {target} instance(s) "
                          f"within {opts.timeout_s:g} s.", "look at the log group; raise --timeout.",
                          log_group=names.log_group)
    out(f"scale_out_s: {measured['scale_out_s']}")
    return measured


def _autoscaling_notes(aws: Aws, names: DeploymentNames, target: int) -> list[str]:
    targets = aws.call(scaling.describe_target_call(names)).get("ScalableTargets", [])
    if not targets:
        return []
    top = int(targets[0].get("MaxCapacity", 0))
    if target > top:
        raise DeployError(ExitCode.USAGE, f"{target} instances is over the autoscaling maximum {top}: Application "
                          "Auto Scaling would take the instance straight back.",
                          "measure at a lower count, or raise the maximum (up --autoscale-max).")
    return ["the endpoint autoscales: a policy may change the count while this measures"]


def _watch(aws: Aws, names: DeploymentNames, obs: Observations, logs: LogWatch, probe: Probe | None,
           opts: ScaleOutOptions, out: Printer, clock: Clock) -> None:
    deadline = obs.started_at + opts.timeout_s
    reported: set[str] = set()
    in_service_at: float | None = None
    last_status, last_line = "", clock.now()
    while clock.now() < deadline:
        description = aws.call(describe_endpoint(names))
        status = str(description.get("EndpointStatus", "Unknown"))
        obs.statuses.append(Status(clock.now(), status, _count(description)))
        if status in {"Failed", "OutOfService"}:
            raise DeployError(ExitCode.ENDPOINT_FAILED, f"endpoint {names.endpoint} is {status} while scaling out: "
                              f"{description.get('FailureReason') or 'no FailureReason'}", None,
                              log_group=names.log_group)
        obs.logs += logs.new_events()
        if probe is not None:
            obs.probes = probe.samples
        found = {s.name: s for s in stages(obs, opts.recovery)}
        for stage in found.values():
            if stage.at_s is not None and stage.name not in reported:
                reported.add(stage.name)
                out(f"  {stage.name}: {stage.at_s:.1f} s ({stage.detail})")
        if status != last_status or clock.now() - last_line >= PROGRESS_S:
            out(f"  endpoint {status} ({clock.now() - obs.started_at:.0f} s)")
            last_status, last_line = status, clock.now()
        if "in_service" in reported:
            in_service_at = in_service_at or clock.now()
            if _done(found, logs.visible, probe is not None, clock.now() - in_service_at, opts):
                return
        clock.sleep(opts.poll_s)


def _done(found: dict[str, Stage], logs_visible: bool, probing: bool, since_in_service_s: float,
          opts: ScaleOutOptions) -> bool:
    recovered = not probing or found["traffic_recovered"].at_s is not None
    logged = (not logs_visible or since_in_service_s >= opts.log_grace_s
              or all(found[name].at_s is not None for name in ("first_log", "container_ready")))
    return recovered and logged


def _restore(aws: Aws, names: DeploymentNames, count: int, opts: ScaleOutOptions, out: Printer,
             clock: Clock) -> None:
    """Set the count back once the endpoint takes updates again (not while it is Updating)."""
    manual = (f"aws sagemaker update-endpoint-weights-and-capacities --endpoint-name {names.endpoint} "
              f"--desired-weights-and-capacities VariantName={VARIANT_NAME},DesiredInstanceCount={count}")
    try:
        deadline = clock.now() + opts.restore_timeout_s
        while str(aws.call(describe_endpoint(names)).get("EndpointStatus")) == "Updating":
            if clock.now() > deadline:
                raise DeployError(ExitCode.TIMEOUT, f"{names.endpoint} is still Updating; the count was not set "
                                  "back.", f"run: {manual}")
            clock.sleep(opts.poll_s)
        aws.call(update_call(names, count))
    except KeyboardInterrupt:
        out(f"interrupted again: the count is NOT set back; run: {manual}")
        raise
    except DeployError as exc:
        exc.note = f"set the count back yourself: {manual}"
        raise
    out(f"set {names.endpoint}/{VARIANT_NAME} back to {count} instance(s) (SageMaker removes the extra one "
        "in the background)")
