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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reference_container_deploy.aws import ApiCall
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.names import VARIANT_NAME, DeploymentNames

NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
# The exact enum value of botocore's application-autoscaling model (MetricType).
HIGH_RES_METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
CONCURRENCY_METRIC = "ConcurrentRequestsPerModel"  # its name in CloudWatch (AWS/SageMaker)
SAGEMAKER_METRICS = "AWS/SageMaker"
SCALE_IN_PERIOD_S = 60
SCALE_IN_PERIODS = 3
DEFAULT_SCALE_OUT_COOLDOWN_S = 60
DEFAULT_SCALE_IN_COOLDOWN_S = 300
MAX_INSTANCES = 100  # the tool's own bound on --instance-count, kept for autoscaling too
PLAN_KEYS = ("min_instances", "max_instances", "target_value", "scale_in_value",
             "scale_out_cooldown_s", "scale_in_cooldown_s")


@dataclass(frozen=True, slots=True)
class Autoscale:
    """What the variant scales between, on what, and how fast."""

    min_instances: int
    max_instances: int
    target_value: float
    scale_in_value: float
    scale_out_cooldown_s: int = DEFAULT_SCALE_OUT_COOLDOWN_S
    scale_in_cooldown_s: int = DEFAULT_SCALE_IN_COOLDOWN_S

    def validate(self) -> None:
        """Raise a usage error naming the first setting that cannot work."""
        if not 1 <= self.min_instances <= MAX_INSTANCES:
            _usage(f"--autoscale-min {self.min_instances} must be between 1 and {MAX_INSTANCES}.")
        if not 1 <= self.max_instances <= MAX_INSTANCES:
            _usage(f"--autoscale-max {self.max_instances} must be between 1 and {MAX_INSTANCES}.")
        if self.min_instances > self.max_instances:
            _usage(f"--autoscale-min {self.min_instances} is above --autoscale-max {self.max_instances}.")
        if not (math.isfinite(self.target_value) and self.target_value > 0):
            _usage(f"--autoscale-target {self.target_value} must be a positive number of concurrent "
                   "requests per instance.")
        if not (math.isfinite(self.scale_in_value) and 0 <= self.scale_in_value < self.target_value):
            _usage(f"the scale-in value {self.scale_in_value} must be at least 0 and under the target "
                   f"{self.target_value} (else the two policies fight).")
        for label, value in (("scale-out", self.scale_out_cooldown_s), ("scale-in", self.scale_in_cooldown_s)):
            if not 0 <= value <= 86400:
                _usage(f"the {label} cooldown {value} s must be between 0 and 86400.")


def _usage(message: str, fix: str | None = None) -> None:
    raise DeployError(ExitCode.USAGE, message, fix)


@dataclass(frozen=True, slots=True)
class PlanFile:
    """The fleet planner's JSON (`python -m bidi_tts_loadtest.plan --json`), as far as `up` needs it."""

    values: dict[str, float]
    stops: list[str]


def load_plan(path: Path) -> PlanFile:
    """Read a plan; a missing, unreadable or malformed file is a usage error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeployError(ExitCode.USAGE, f"--plan {path}: no such file.", None) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DeployError(ExitCode.USAGE, f"--plan {path}: cannot read it ({exc.__class__.__name__}).",
                          None) from None
    except json.JSONDecodeError as exc:
        raise DeployError(ExitCode.USAGE, f"--plan {path} is not JSON (line {exc.lineno}).",
                          "pass the file `python -m bidi_tts_loadtest.plan --json` wrote.") from None
    if not isinstance(data, dict):
        _usage(f"--plan {path} is not a plan: a JSON object is expected.")
    values: dict[str, float] = {}
    for key in PLAN_KEYS:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            _usage(f"--plan {path}: {key!r} is missing or not a number.",
                   "pass the file `python -m bidi_tts_loadtest.plan --json` wrote.")
        values[key] = float(value)
    findings = data.get("findings", [])
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        _usage(f"--plan {path}: 'findings' must be a list of objects.")
    stops = [f"{f.get('name', '?')}: {f.get('detail', '')}".strip() for f in findings
             if str(f.get("level", "")).upper() == "STOP"]
    return PlanFile(values=values, stops=stops)


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
) -> Autoscale | None:
    """The autoscaling `up` sets, or None when none is asked for. Flags override the plan's values."""
    flags = (min_instances, max_instances, target_value, scale_in_value)
    if plan_path is None and all(v is None for v in flags):
        return None
    base: Autoscale | None = None
    if plan_path is not None:
        plan = load_plan(plan_path)
        if plan.stops and not force:
            _usage(f"--plan {plan_path} has a STOP finding ({plan.stops[0]}); it would not hold the SLO.",
                   "fix the plan, or pass --force to deploy it anyway.")
        v = plan.values
        base = Autoscale(
            min_instances=_whole(v["min_instances"], "min_instances"),
            max_instances=_whole(v["max_instances"], "max_instances"),
            target_value=v["target_value"],
            scale_in_value=v["scale_in_value"],
            scale_out_cooldown_s=_whole(v["scale_out_cooldown_s"], "scale_out_cooldown_s"),
            scale_in_cooldown_s=_whole(v["scale_in_cooldown_s"], "scale_in_cooldown_s"),
        )
    elif min_instances is None or max_instances is None or target_value is None:
        _usage("autoscaling needs --autoscale-min, --autoscale-max and --autoscale-target together "
               "(or --plan PLAN.json).")
    if base is None:
        assert min_instances is not None and max_instances is not None and target_value is not None
        base = Autoscale(min_instances=min_instances, max_instances=max_instances, target_value=target_value,
                         scale_in_value=target_value / 2 if scale_in_value is None else scale_in_value)
    else:
        base = replace(
            base,
            min_instances=base.min_instances if min_instances is None else min_instances,
            max_instances=base.max_instances if max_instances is None else max_instances,
            target_value=base.target_value if target_value is None else target_value,
            scale_in_value=base.scale_in_value if scale_in_value is None else scale_in_value,
        )
    base.validate()
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


def register_call(names: DeploymentNames, spec: Autoscale) -> ApiCall:
    return ApiCall("application-autoscaling", "RegisterScalableTarget", {
        **_target(names), "MinCapacity": spec.min_instances, "MaxCapacity": spec.max_instances,
    })


def target_tracking_call(names: DeploymentNames, spec: Autoscale) -> ApiCall:
    return ApiCall("application-autoscaling", "PutScalingPolicy", {
        **_target(names),
        "PolicyName": target_policy_name(names),
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": spec.target_value,
            "PredefinedMetricSpecification": {"PredefinedMetricType": HIGH_RES_METRIC},
            "ScaleOutCooldown": spec.scale_out_cooldown_s,
            "ScaleInCooldown": spec.scale_in_cooldown_s,
            "DisableScaleIn": True,
        },
    })


def step_scale_in_call(names: DeploymentNames, spec: Autoscale) -> ApiCall:
    return ApiCall("application-autoscaling", "PutScalingPolicy", {
        **_target(names),
        "PolicyName": scale_in_policy_name(names),
        "PolicyType": "StepScaling",
        "StepScalingPolicyConfiguration": {
            "AdjustmentType": "ChangeInCapacity",
            "StepAdjustments": [{"MetricIntervalUpperBound": 0.0, "ScalingAdjustment": -1}],
            "Cooldown": spec.scale_in_cooldown_s,
            "MetricAggregationType": "Average",
        },
    })


def scale_in_alarm_call(names: DeploymentNames, spec: Autoscale, policy_arn: str) -> ApiCall:
    return ApiCall("cloudwatch", "PutMetricAlarm", {
        "AlarmName": scale_in_alarm_name(names),
        "AlarmDescription": f"{names.name}: sustained trough, remove one instance (bidi-tts deploy)",
        "Namespace": SAGEMAKER_METRICS,
        "MetricName": CONCURRENCY_METRIC,
        "Dimensions": variant_dimensions(names),
        "Statistic": "Average",
        "Period": SCALE_IN_PERIOD_S,
        "EvaluationPeriods": SCALE_IN_PERIODS,
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
