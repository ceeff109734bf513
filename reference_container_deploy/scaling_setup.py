"""What `up` adds once the endpoint is InService (autoscaling, alarms, dashboard) and what `down` removes first.

Application Auto Scaling registers a SageMaker variant only once its endpoint is InService, so `up`
runs these after the wait; `down` removes them before DeleteEndpoint, so that no policy acts on an
endpoint that is going away and nothing of the deployment is left behind. Both tolerate absence:
`down` on a deployment without autoscaling (or run twice) finds nothing and says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bidi_tts.fleet_plan import Policy
from reference_container_deploy import autoscale as scaling
from reference_container_deploy import monitoring
from reference_container_deploy.aws import ApiCall, Aws, error_code, is_not_found
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.names import DeploymentNames

DEFAULT_FIRST_AUDIO_P95_MS = monitoring.DEFAULT_FIRST_AUDIO_P95_MS
Printer = Callable[[str], None]
_ARN_PLACEHOLDER = "<PolicyARN returned by the StepScaling PutScalingPolicy>"


@dataclass(frozen=True, slots=True)
class Setup:
    """The extras `up` was asked for."""

    autoscale: Policy | None
    alarms: bool
    first_audio_p95_ms: float
    dashboard: bool
    region: str


def check_options(autoscale: Policy | None, instance_count: int, *, wait: bool, alarms: bool,
                  dashboard: bool, first_audio_p95_ms: float = DEFAULT_FIRST_AUDIO_P95_MS) -> None:
    """Refuse combinations that cannot work, before anything is created."""
    if not first_audio_p95_ms > 0:
        raise DeployError(ExitCode.USAGE, f"--first-audio-p95-ms {first_audio_p95_ms} must be positive.")
    if (autoscale or alarms or dashboard) and not wait:
        raise DeployError(
            ExitCode.USAGE,
            "autoscaling, --alarms and --dashboard are set once the endpoint is InService, so they need "
            "the wait that --no-wait skips.",
            "drop --no-wait.",
        )
    if autoscale and not autoscale.min_instances <= instance_count <= autoscale.max_instances:
        raise DeployError(
            ExitCode.USAGE,
            f"--instance-count {instance_count} is outside autoscaling's {autoscale.min_instances}.."
            f"{autoscale.max_instances}.",
            "leave --instance-count out (it then starts at the minimum) or pick one in the range.",
        )


def _calls(names: DeploymentNames, setup: Setup, arn: str) -> list[ApiCall]:
    calls: list[ApiCall] = []
    if setup.alarms:
        calls += monitoring.alarm_calls(names, setup.first_audio_p95_ms)
    if setup.dashboard:
        calls.append(monitoring.dashboard_call(names, setup.region))
    return calls


def describe(names: DeploymentNames, setup: Setup) -> list[str]:
    """The calls `apply` makes, as --dry-run prints them."""
    lines: list[str] = []
    if setup.autoscale:
        spec = setup.autoscale
        lines += [
            scaling.register_call(names, spec).describe(),
            scaling.target_tracking_call(names, spec).describe(),
            scaling.step_scale_in_call(names, spec).describe(),
            scaling.scale_in_alarm_call(names, spec, _ARN_PLACEHOLDER).describe(),
        ]
    lines += [call.describe() for call in _calls(names, setup, _ARN_PLACEHOLDER)]
    return lines


def apply(aws: Aws, names: DeploymentNames, setup: Setup, out: Printer, created: list[str]) -> None:
    """Create what `setup` asks for, adding each to `created` (the error note of a later failure)."""
    if setup.autoscale:
        spec = setup.autoscale
        aws.call(scaling.register_call(names, spec))
        created.append(f"scalable target {scaling.resource_id(names)}")
        out(f"registered {created[-1]}: {spec.min_instances}..{spec.max_instances} instances")
        aws.call(scaling.target_tracking_call(names, spec))
        created.append(f"scaling policy {scaling.target_policy_name(names)}")
        out(f"created {created[-1]}: target {spec.target_value:g} concurrent requests per instance on "
            f"{scaling.HIGH_RES_METRIC} (scale-in disabled, scale-out cooldown {spec.scale_out_cooldown_s:g} s)")
        arn = scaling.policy_arn(aws.call(scaling.step_scale_in_call(names, spec)))
        created.append(f"scaling policy {scaling.scale_in_policy_name(names)}")
        out(f"created {created[-1]}: remove 1 instance (cooldown {spec.scale_in_cooldown_s:g} s)")
        aws.call(scaling.scale_in_alarm_call(names, spec, arn))
        created.append(f"alarm {scaling.scale_in_alarm_name(names)}")
        out(f"created {created[-1]}: {scaling.CONCURRENCY_METRIC} Average < {spec.scale_in_value:g} for "
            f"{spec.scale_in_periods} x {spec.scale_in_period_s:g} s")
    for call in _calls(names, setup, ""):
        aws.call(call)
        kind = "dashboard" if call.operation == "PutDashboard" else "alarm"
        created.append(f"{kind} {call.params.get('AlarmName') or call.params.get('DashboardName')}")
        out(f"created {created[-1]}")


def _missing_ok(aws: Aws, call: ApiCall) -> bool:
    """Run `call`; False when what it deletes is already gone."""
    try:
        aws.call(call)
    except DeployError as exc:
        if exc.__cause__ is not None and is_not_found(exc.__cause__):
            return False
        raise
    return True


def _denied(exc: DeployError) -> bool:
    return exc.__cause__ is not None and error_code(exc.__cause__) in {"AccessDenied", "AccessDeniedException"}


def remove(aws: Aws, names: DeploymentNames, out: Printer) -> None:
    """Delete the dashboard, alarms, scaling policies and scalable target of a deployment, if any.

    A deployment made without them must come down even for an identity without CloudWatch or
    Application Auto Scaling permissions: a read it may not make is reported and skipped.
    """
    found_any = False
    for label, step in (("dashboard", _remove_dashboard), ("alarms", _remove_alarms),
                        ("autoscaling", _remove_autoscaling)):
        try:
            found_any = step(aws, names, out) or found_any
        except DeployError as exc:
            if not _denied(exc):
                raise
            out(f"{label} of {names.endpoint}: not checked ({exc.message}); remove it yourself if `up` made it")
            found_any = True
    if not found_any:
        out(f"autoscaling of {names.endpoint}: none found, nothing to remove")


def _remove_dashboard(aws: Aws, names: DeploymentNames, out: Printer) -> bool:
    dashboard = monitoring.dashboard_name(names)
    listed = aws.call(ApiCall("cloudwatch", "ListDashboards", {"DashboardNamePrefix": dashboard}))
    if not any(d.get("DashboardName") == dashboard for d in listed.get("DashboardEntries", [])):
        return False
    aws.call(ApiCall("cloudwatch", "DeleteDashboards", {"DashboardNames": [dashboard]}))
    out(f"deleted dashboard {dashboard}")
    return True


def _remove_alarms(aws: Aws, names: DeploymentNames, out: Printer) -> bool:
    ours = [scaling.scale_in_alarm_name(names), *monitoring.alarm_names(names)]
    found = aws.call(ApiCall("cloudwatch", "DescribeAlarms", {"AlarmNames": ours}))
    present = [a["AlarmName"] for a in found.get("MetricAlarms", []) if a.get("AlarmName") in ours]
    if not present:
        return False
    aws.call(ApiCall("cloudwatch", "DeleteAlarms", {"AlarmNames": present}))
    out(f"deleted alarm(s) {', '.join(present)}")
    return True


def _remove_autoscaling(aws: Aws, names: DeploymentNames, out: Printer) -> bool:
    policies = aws.call(scaling.describe_policies_call(names)).get("ScalingPolicies", [])
    for policy in policies:
        name = str(policy.get("PolicyName"))
        if _missing_ok(aws, scaling.delete_policy_call(names, name)):
            out(f"deleted scaling policy {name}")
    targets = aws.call(scaling.describe_target_call(names)).get("ScalableTargets", [])
    if targets and _missing_ok(aws, scaling.deregister_call(names)):
        out(f"deregistered scalable target {scaling.resource_id(names)}")
    return bool(policies or targets)


def describe_removal(names: DeploymentNames) -> list[str]:
    """What `remove` calls, as `down --dry-run` prints it."""
    alarms = [scaling.scale_in_alarm_name(names), *monitoring.alarm_names(names)]
    return [
        f'cloudwatch:ListDashboards {{"DashboardNamePrefix": "{monitoring.dashboard_name(names)}"}}, then '
        "DeleteDashboards if it is there",
        ApiCall("cloudwatch", "DescribeAlarms", {"AlarmNames": alarms}).describe()
        + ", then DeleteAlarms for those there",
        f"{scaling.describe_policies_call(names).describe()}, then DeleteScalingPolicy for each",
        f"{scaling.describe_target_call(names).describe()}, then "
        f"{scaling.deregister_call(names).describe()} if registered",
    ]
