"""Autoscaling of the endpoint's variant: the settings (flags, or a fleet plan's JSON) and their calls.

Application Auto Scaling scales `endpoint/NAME-endpoint/variant/AllTraffic` on
`sagemaker:variant:DesiredInstanceCount`. Scale-out is target tracking on SageMaker's
high-resolution concurrent-requests-per-model metric (emitted every 10 s) with scale-in disabled;
scale-in is a separate step policy fired by our own alarm (ConcurrentRequestsPerModel Average under
`scale_in_value` for 3 x 60 s removes one instance). Target tracking's own scale-in would remove
instances as soon as the average drops under the target, which for long streaming sessions cuts
capacity that the next minute's sessions need; the step policy scales in only on a sustained trough.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from bidi_tts.fleet_plan import PlanFileError, Policy, plan_stops, read_policy
from reference_container_deploy.aws import ApiCall
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.names import VARIANT_NAME, DeploymentNames

NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
# The exact enum value of botocore's application-autoscaling model (MetricType).
HIGH_RES_METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
CONCURRENCY_METRIC = "ConcurrentRequestsPerModel"  # its name in CloudWatch (AWS/SageMaker)
SAGEMAKER_METRICS = "AWS/SageMaker"
MAX_INSTANCES = 100  # the tool's own bound on --instance-count, kept for autoscaling too
_FROM_PLANNER = "pass the file `python -m bidi_tts_loadtest.plan --json` wrote."


def check(policy: Policy) -> None:
    """Raise a usage error naming the first setting of `policy` that cannot work."""
    if not 1 <= policy.min_instances <= MAX_INSTANCES:
        _usage(f"--autoscale-min {policy.min_instances} must be between 1 and {MAX_INSTANCES}.")
    if not 1 <= policy.max_instances <= MAX_INSTANCES:
        _usage(f"--autoscale-max {policy.max_instances} must be between 1 and {MAX_INSTANCES}.")
    if policy.min_instances > policy.max_instances:
        _usage(f"--autoscale-min {policy.min_instances} is above --autoscale-max {policy.max_instances}.")
    if not (math.isfinite(policy.target_value) and policy.target_value > 0):
        _usage(f"--autoscale-target {policy.target_value} must be a positive number of concurrent "
               "requests per instance.")
    if not (math.isfinite(policy.scale_in_value) and 0 <= policy.scale_in_value < policy.target_value):
        _usage(f"the scale-in value {policy.scale_in_value} must be at least 0 and under the target "
               f"{policy.target_value} (else the two policies fight).")
    for label, value in (("scale-out", policy.scale_out_cooldown_s), ("scale-in", policy.scale_in_cooldown_s)):
        if not 0 <= value <= 86400:
            _usage(f"the {label} cooldown {value} s must be between 0 and 86400.")


def _usage(message: str, fix: str | None = None) -> NoReturn:
    raise DeployError(ExitCode.USAGE, message, fix)


def load_plan(path: Path) -> tuple[Policy, tuple[str, ...]]:
    """The policy of a plan file and its STOP findings; a missing, unreadable or malformed file is a usage error.

    The file is the planner's (`python -m bidi_tts_loadtest.plan --json`), read with the same
    :func:`bidi_tts.fleet_plan.read_policy` the fleet simulation uses; here every policy key is required."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeployError(ExitCode.USAGE, f"--plan {path}: no such file.", None) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DeployError(ExitCode.USAGE, f"--plan {path}: cannot read it ({exc.__class__.__name__}).",
                          None) from None
    except json.JSONDecodeError as exc:
        raise DeployError(ExitCode.USAGE, f"--plan {path} is not JSON (line {exc.lineno}).", _FROM_PLANNER) from None
    if not isinstance(data, dict):
        _usage(f"--plan {path} is not a plan: a JSON object is expected.")
    try:
        policy = read_policy(data, f"--plan {path}", defaults=False)
        stops = plan_stops(data, f"--plan {path}")
    except PlanFileError as exc:
        _usage(f"{exc}.", _FROM_PLANNER)
    for key in ("min_instances", "max_instances", "scale_out_cooldown_s", "scale_in_cooldown_s"):
        _whole(data[key], key)
    return policy, stops


def _whole(value: float, key: str) -> int:
    if value != int(value):
        _usage(f"--plan: {key} {value} is not a whole number.")
    return int(value)


def resolve(
    plan_path: Path | None,
    *,
    min_instances: int | None,
    max_instances: int | None,
    target_value: float | None,
    scale_in_value: float | None,
    force: bool,
) -> Policy | None:
    """The autoscaling `up` sets, or None when none is asked for. Flags override the plan's values."""
    flags = (min_instances, max_instances, target_value, scale_in_value)
    if plan_path is None and all(v is None for v in flags):
        return None
    base: Policy | None = None
    if plan_path is not None:
        base, stops = load_plan(plan_path)
        if stops and not force:
            _usage(f"--plan {plan_path} has a STOP finding ({stops[0]}); it would not hold the SLO.",
                   "fix the plan, or pass --force to deploy it anyway.")
    elif min_instances is None or max_instances is None or target_value is None:
        _usage("autoscaling needs --autoscale-min, --autoscale-max and --autoscale-target together "
               "(or --plan PLAN.json).")
    if base is None:
        assert min_instances is not None and max_instances is not None and target_value is not None
        base = Policy(min_instances=min_instances, max_instances=max_instances, target_value=target_value,
                         scale_in_value=target_value / 2 if scale_in_value is None else scale_in_value)
    else:
        base = replace(
            base,
            min_instances=base.min_instances if min_instances is None else min_instances,
            max_instances=base.max_instances if max_instances is None else max_instances,
            target_value=base.target_value if target_value is None else target_value,
            scale_in_value=base.scale_in_value if scale_in_value is None else scale_in_value,
        )
    check(base)
    return base


# -- the calls ---------------------------------------------------------------------------------


def resource_id(names: DeploymentNames) -> str:
    return f"endpoint/{names.endpoint}/variant/{VARIANT_NAME}"


def target_policy_name(names: DeploymentNames) -> str:
    return f"{names.endpoint}-concurrency-target"


def scale_in_policy_name(names: DeploymentNames) -> str:
    return f"{names.endpoint}-scale-in"


def scale_in_alarm_name(names: DeploymentNames) -> str:
    return f"{names.endpoint}-scale-in"


def _target(names: DeploymentNames) -> dict[str, str]:
    return {"ServiceNamespace": NAMESPACE, "ResourceId": resource_id(names), "ScalableDimension": DIMENSION}


def variant_dimensions(names: DeploymentNames) -> list[dict[str, str]]:
    return [{"Name": "EndpointName", "Value": names.endpoint}, {"Name": "VariantName", "Value": VARIANT_NAME}]


def register_call(names: DeploymentNames, spec: Policy) -> ApiCall:
    return ApiCall("application-autoscaling", "RegisterScalableTarget", {
        **_target(names), "MinCapacity": spec.min_instances, "MaxCapacity": spec.max_instances,
    })


def target_tracking_call(names: DeploymentNames, spec: Policy) -> ApiCall:
    return ApiCall("application-autoscaling", "PutScalingPolicy", {
        **_target(names),
        "PolicyName": target_policy_name(names),
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": spec.target_value,
            "PredefinedMetricSpecification": {"PredefinedMetricType": HIGH_RES_METRIC},
            "ScaleOutCooldown": int(spec.scale_out_cooldown_s),
            "ScaleInCooldown": int(spec.scale_in_cooldown_s),
            "DisableScaleIn": True,
        },
    })


def step_scale_in_call(names: DeploymentNames, spec: Policy) -> ApiCall:
    return ApiCall("application-autoscaling", "PutScalingPolicy", {
        **_target(names),
        "PolicyName": scale_in_policy_name(names),
        "PolicyType": "StepScaling",
        "StepScalingPolicyConfiguration": {
            "AdjustmentType": "ChangeInCapacity",
            "StepAdjustments": [{"MetricIntervalUpperBound": 0.0, "ScalingAdjustment": -1}],
            "Cooldown": int(spec.scale_in_cooldown_s),
            "MetricAggregationType": "Average",
        },
    })


def scale_in_alarm_call(names: DeploymentNames, spec: Policy, policy_arn: str) -> ApiCall:
    return ApiCall("cloudwatch", "PutMetricAlarm", {
        "AlarmName": scale_in_alarm_name(names),
        "AlarmDescription": f"{names.name}: sustained trough, remove one instance (bidi-tts deploy)",
        "Namespace": SAGEMAKER_METRICS,
        "MetricName": CONCURRENCY_METRIC,
        "Dimensions": variant_dimensions(names),
        "Statistic": "Average",
        "Period": int(spec.scale_in_period_s),
        "EvaluationPeriods": spec.scale_in_periods,
        "Threshold": spec.scale_in_value,
        "ComparisonOperator": "LessThanThreshold",
        # No traffic at all is the deepest trough: without this an idle endpoint never scales in.
        "TreatMissingData": "breaching",
        "AlarmActions": [policy_arn],
        "Tags": names.tags(),
    })


def deregister_call(names: DeploymentNames) -> ApiCall:
    return ApiCall("application-autoscaling", "DeregisterScalableTarget", _target(names))


def describe_policies_call(names: DeploymentNames) -> ApiCall:
    return ApiCall("application-autoscaling", "DescribeScalingPolicies", {
        "ServiceNamespace": NAMESPACE, "ResourceId": resource_id(names), "ScalableDimension": DIMENSION,
    })


def delete_policy_call(names: DeploymentNames, policy_name: str) -> ApiCall:
    return ApiCall("application-autoscaling", "DeleteScalingPolicy", {**_target(names), "PolicyName": policy_name})


def describe_target_call(names: DeploymentNames) -> ApiCall:
    return ApiCall("application-autoscaling", "DescribeScalableTargets", {
        "ServiceNamespace": NAMESPACE, "ResourceIds": [resource_id(names)], "ScalableDimension": DIMENSION,
    })


def policy_arn(response: dict[str, Any]) -> str:
    return str(response.get("PolicyARN", ""))
