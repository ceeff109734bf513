"""Poll DescribeEndpoint with progress output until the endpoint is InService, Failed, or gone."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from reference_container_deploy.aws import Aws, is_not_found
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.names import DeploymentNames
from reference_container_deploy.plan import describe_endpoint

Printer = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Polling:
    """How to poll: the overall limit, the pause between calls, and the clock (injectable for tests)."""

    timeout_s: float = 1800.0
    interval_s: float = 15.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def failure_fix(reason: str) -> str:
    """The most likely fix for a SageMaker endpoint FailureReason."""
    lowered = reason.lower()
    if "ping" in lowered or "health check" in lowered:
        return (
            "the container did not answer GET /ping with 200 in time: read the log group, fix the start-up, "
            "or raise --startup-timeout."
        )
    if "capacity" in lowered:
        return "SageMaker has no capacity for this instance type now: retry later or use another region."
    if "image" in lowered or "ecr" in lowered or "pull" in lowered:
        return (
            "check that --image exists and that the execution role may pull it (ecr:BatchGetImage, "
            "ecr:GetDownloadUrlForLayer, ecr:GetAuthorizationToken)."
        )
    if "quota" in lowered or "limit" in lowered:
        return "request a quota increase in Service Quotas (Amazon SageMaker) or lower --instance-count."
    return "read the CloudWatch log group below, then `down --name NAME` and `up` again."


def wait_in_service(aws: Aws, names: DeploymentNames, polling: Polling, out: Printer) -> None:
    """Block until the endpoint is InService; raise on Failed or when `polling.timeout_s` passes."""
    start = polling.clock()
    last_status = None
    while True:
        description = aws.call(describe_endpoint(names))
        status = str(description.get("EndpointStatus", "Unknown"))
        elapsed = polling.clock() - start
        if status != last_status:
            out(f"  endpoint {names.endpoint}: {status} ({_elapsed(elapsed)})")
            last_status = status
        else:
            out(f"  ... still {status} ({_elapsed(elapsed)})")
        if status == "InService":
            return
        if status in {"Failed", "OutOfService"}:
            reason = str(description.get("FailureReason") or "SageMaker gave no FailureReason")
            raise DeployError(
                ExitCode.ENDPOINT_FAILED,
                f"endpoint {names.endpoint} is {status}: {reason}",
                failure_fix(reason),
                log_group=names.log_group,
            )
        if elapsed + polling.interval_s > polling.timeout_s:
            raise DeployError(
                ExitCode.TIMEOUT,
                f"endpoint {names.endpoint} is still {status} after {_elapsed(elapsed)}.",
                "wait longer (--wait-timeout) and check the console; `down --name NAME` removes it.",
                log_group=names.log_group,
            )
        polling.sleep(polling.interval_s)


def wait_deleted(aws: Aws, names: DeploymentNames, polling: Polling, out: Printer) -> None:
    """Block until DescribeEndpoint says the endpoint no longer exists."""
    start = polling.clock()
    while True:
        try:
            description = aws.call(describe_endpoint(names))
        except DeployError as exc:
            if exc.__cause__ is not None and is_not_found(exc.__cause__):
                out(f"  endpoint {names.endpoint}: deleted ({_elapsed(polling.clock() - start)})")
                return
            raise
        elapsed = polling.clock() - start
        out(
            f"  endpoint {names.endpoint}: {description.get('EndpointStatus', 'Unknown')} "
            f"({_elapsed(elapsed)})"
        )
        if elapsed + polling.interval_s > polling.timeout_s:
            raise DeployError(
                ExitCode.TIMEOUT,
                f"endpoint {names.endpoint} is still there after {_elapsed(elapsed)}.",
                "run `down` again later; the endpoint config and model were not deleted yet.",
            )
        polling.sleep(polling.interval_s)
