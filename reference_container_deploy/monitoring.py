"""Optional alarms (`up --alarms`) and a small CloudWatch dashboard (`up --dashboard`) for one endpoint.

First-audio latency: the reference container logs its own `first_audio_s` in key=value lines, which a
CloudWatch Logs metric filter cannot turn into a number, and it publishes no metric. So the alarm
watches SageMaker's `FirstChunkLatency` (AWS/SageMaker, microseconds: the time to the first response
chunk of a streamed invocation). We found it named for response streaming only in secondary sources,
not in the AWS guide's metric table, and could not confirm that bidirectional sessions emit it; the
alarm therefore leaves missing data as missing, so that it shows INSUFFICIENT_DATA rather than a
reassuring OK where SageMaker emits nothing (docs/deploy.md says how to check).
"""

from __future__ import annotations

import json

from reference_container_deploy.autoscale import (
    CONCURRENCY_METRIC,
    SAGEMAKER_METRICS,
    variant_dimensions,
)
from reference_container_deploy.aws import ApiCall
from reference_container_deploy.names import VARIANT_NAME, DeploymentNames

FIRST_AUDIO_METRIC = "FirstChunkLatency"
ERRORS_METRIC = "Invocation5XXErrors"
DEFAULT_FIRST_AUDIO_P95_MS = 500.0


def first_audio_alarm_name(names: DeploymentNames) -> str:
    return f"{names.endpoint}-first-audio-p95"


def errors_alarm_name(names: DeploymentNames) -> str:
    return f"{names.endpoint}-5xx"


def alarm_names(names: DeploymentNames) -> list[str]:
    """Every alarm `up --alarms` may create (the scale-in alarm belongs to autoscaling)."""
    return [first_audio_alarm_name(names), errors_alarm_name(names)]


def dashboard_name(names: DeploymentNames) -> str:
    return f"{names.endpoint}-bidi-tts"  # dashboard names allow letters, digits, - and _


def alarm_calls(names: DeploymentNames, first_audio_p95_ms: float) -> list[ApiCall]:
    """First-audio p95 over 5 minutes above the SLO, and 5xx answers in two minutes running."""
    common = {"Namespace": SAGEMAKER_METRICS, "Dimensions": variant_dimensions(names), "Tags": names.tags()}
    return [
        ApiCall("cloudwatch", "PutMetricAlarm", {
            **common,
            "AlarmName": first_audio_alarm_name(names),
            "AlarmDescription": f"{names.name}: p95 time to the first response chunk over "
                                f"{first_audio_p95_ms:g} ms (bidi-tts deploy)",
            "MetricName": FIRST_AUDIO_METRIC,
            "ExtendedStatistic": "p95",
            "Period": 300,
            "EvaluationPeriods": 1,
            "Threshold": first_audio_p95_ms * 1000.0,  # the metric is in microseconds
            "ComparisonOperator": "GreaterThanThreshold",
            "TreatMissingData": "missing",
        }),
        ApiCall("cloudwatch", "PutMetricAlarm", {
            **common,
            "AlarmName": errors_alarm_name(names),
            "AlarmDescription": f"{names.name}: the container answered 5xx (bidi-tts deploy)",
            "MetricName": ERRORS_METRIC,
            "Statistic": "Sum",
            "Period": 60,
            "EvaluationPeriods": 2,
            "Threshold": 0.0,
            "ComparisonOperator": "GreaterThanThreshold",
            "TreatMissingData": "notBreaching",  # no invocations, no errors
        }),
    ]


def dashboard_call(names: DeploymentNames, region: str) -> ApiCall:
    """Concurrency per instance, instance count, first-chunk latency p95, 5xx: four small graphs."""
    dims = ["EndpointName", names.endpoint, "VariantName", VARIANT_NAME]

    def graph(title: str, metrics: list[list[object]], x: int, y: int) -> dict[str, object]:
        return {"type": "metric", "x": x, "y": y, "width": 12, "height": 6,
                "properties": {"title": title, "region": region, "view": "timeSeries", "period": 60,
                               "metrics": metrics}}

    body = {"widgets": [
        graph("Concurrent requests per instance",
              [[SAGEMAKER_METRICS, CONCURRENCY_METRIC, *dims, {"stat": "Average", "period": 10}]], 0, 0),
        graph("Instances (CPUUtilization samples a minute: one per instance)",
              [["/aws/sagemaker/Endpoints", "CPUUtilization", *dims, {"stat": "SampleCount"}]], 12, 0),
        graph("First chunk latency p95 (us)", [[SAGEMAKER_METRICS, FIRST_AUDIO_METRIC, *dims, {"stat": "p95"}]],
              0, 6),
        graph("5xx", [[SAGEMAKER_METRICS, ERRORS_METRIC, *dims, {"stat": "Sum"}]], 12, 6),
    ]}
    return ApiCall("cloudwatch", "PutDashboard", {
        "DashboardName": dashboard_name(names), "DashboardBody": json.dumps(body, sort_keys=True),
    })
