"""`up` with autoscaling, alarms and a dashboard, then `down`, against moto on loopback; and the bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reference_container_deploy.autoscale import HIGH_RES_METRIC
from reference_container_deploy.cli import main
from reference_container_deploy.errors import ExitCode
from tests.deploy.conftest import ECR_IMAGE, EMPTY, ROLE_ARN, Moto

RESOURCE = "endpoint/as-endpoint/variant/AllTraffic"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
BASE = ["up", "--name", "as", "--image", ECR_IMAGE, "--role-arn", ROLE_ARN, "--instance-type", "ml.g4dn.xlarge",
        "--skip-label-check", "--poll-interval", "0.05"]


def plan_file(tmp_path: Path, **changes: object) -> Path:
    plan: dict[str, object] = {
        "min_instances": 2, "max_instances": 6, "target_value": 4.0, "scale_in_value": 1.5,
        "scale_out_cooldown_s": 45, "scale_in_cooldown_s": 600, "cost_per_hour_peak": 8.4,
        "cost_per_million_chars_peak": 1.0,
        "findings": [{"level": "OK", "name": "headroom", "detail": "peak within max"}],
    }
    plan.update(changes)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def scaling_state(moto: Moto) -> dict[str, object]:
    aas, cw = moto.client("application-autoscaling"), moto.client("cloudwatch")
    return {
        "targets": aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"],
        "policies": aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"],
        "alarms": cw.describe_alarms()["MetricAlarms"],
        "dashboards": cw.list_dashboards()["DashboardEntries"],
    }


def test_up_with_a_plan_and_flags_then_down_removes_it_all(moto: Moto, tmp_path: Path) -> None:
    # The plan says 2..6 at target 4; the flag --autoscale-max 5 overrides its max.
    up = moto.run_cli(*BASE, "--plan", str(plan_file(tmp_path)), "--autoscale-max", "5", "--alarms", "--dashboard")
    assert up.returncode == 0, up.stderr
    sm = moto.client("sagemaker")
    [variant] = sm.describe_endpoint_config(EndpointConfigName="as-config")["ProductionVariants"]
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    assert variant["InitialInstanceCount"] == 2  # starts at the minimum

    state = scaling_state(moto)
    [target] = state["targets"]  # type: ignore[misc]
    assert (target["ResourceId"], target["ScalableDimension"]) == (RESOURCE, DIMENSION)
    assert (target["MinCapacity"], target["MaxCapacity"]) == (2, 5)
    policies = {p["PolicyType"]: p for p in state["policies"]}  # type: ignore[attr-defined]
    tracking = policies["TargetTrackingScaling"]["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["PredefinedMetricSpecification"]["PredefinedMetricType"] == HIGH_RES_METRIC
    assert tracking["TargetValue"] == 4.0 and tracking["DisableScaleIn"] is True
    assert (tracking["ScaleOutCooldown"], tracking["ScaleInCooldown"]) == (45, 600)
    step = policies["StepScaling"]["StepScalingPolicyConfiguration"]
    assert step["StepAdjustments"] == [{"MetricIntervalUpperBound": 0.0, "ScalingAdjustment": -1}]
    alarms = {a["AlarmName"]: a for a in state["alarms"]}  # type: ignore[attr-defined]
    scale_in = alarms["as-endpoint-scale-in"]
    assert (scale_in["MetricName"], scale_in["Statistic"], scale_in["Threshold"]) == (
        "ConcurrentRequestsPerModel", "Average", 1.5)
    assert (scale_in["Period"], scale_in["EvaluationPeriods"], scale_in["ComparisonOperator"]) == (
        60, 3, "LessThanThreshold")
    assert scale_in["AlarmActions"] == [policies["StepScaling"]["PolicyARN"]]
    assert {"EndpointName": "as-endpoint"} == {d["Name"]: d["Value"] for d in scale_in["Dimensions"]
                                               if d["Name"] == "EndpointName"}
    assert alarms["as-endpoint-first-audio-p95"]["MetricName"] == "FirstChunkLatency"
    assert alarms["as-endpoint-5xx"]["MetricName"] == "Invocation5XXErrors"
    assert [d["DashboardName"] for d in state["dashboards"]] == ["as-endpoint-bidi-tts"]  # type: ignore[attr-defined]
    assert "quota:" in up.stdout and "not checked" in up.stdout  # moto has no SageMaker quotas

    down = moto.run_cli("down", "--name", "as", "--poll-interval", "0.05")
    assert down.returncode == 0, down.stderr
    assert scaling_state(moto) == {"targets": [], "policies": [], "alarms": [], "dashboards": []}
    assert moto.inventory() == EMPTY
    out = down.stdout
    # Policies and target go before the endpoint.
    assert out.index("deleted scaling policy") < out.index("deregistered scalable target") < out.index(
        "endpoint as-endpoint: deleted")
    again = moto.run_cli("down", "--name", "as", "--poll-interval", "0.05")
    assert again.returncode == 0, again.stderr
    assert "autoscaling of as-endpoint: none found" in again.stdout


def test_flags_alone_without_extras(moto: Moto) -> None:
    assert main([*BASE, "--autoscale-min", "1", "--autoscale-max", "3", "--autoscale-target", "2"]) == 0
    state = scaling_state(moto)
    [target] = state["targets"]  # type: ignore[misc]
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 3)
    [alarm] = state["alarms"]  # type: ignore[misc]
    assert alarm["Threshold"] == 1.0  # scale-in defaults to half the target
    assert state["dashboards"] == []
    assert main(["down", "--name", "as", "--poll-interval", "0.05"]) == 0
    assert scaling_state(moto)["targets"] == []


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--autoscale-min", "4", "--autoscale-max", "2", "--autoscale-target", "3"], "is above --autoscale-max"),
        (["--autoscale-min", "1", "--autoscale-max", "2", "--autoscale-target", "0"], "must be a positive"),
        (["--autoscale-min", "1", "--autoscale-max", "2", "--autoscale-target", "-1"], "must be a positive"),
        (["--autoscale-min", "1", "--autoscale-max", "2"], "together"),
        (["--autoscale-min", "1", "--autoscale-max", "2", "--autoscale-target", "3", "--autoscale-scale-in", "3"],
         "under the target"),
        (["--autoscale-min", "1", "--autoscale-max", "2", "--autoscale-target", "3", "--instance-count", "5"],
         "outside autoscaling"),
        (["--autoscale-min", "1", "--autoscale-max", "2", "--autoscale-target", "3", "--no-wait"], "--no-wait"),
        (["--plan", "/nonexistent/plan.json"], "no such file"),
    ],
)
def test_bad_combinations_are_one_line_and_create_nothing(
    moto: Moto, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    assert main([*BASE, *extra]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err, err
    assert moto.inventory() == EMPTY


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "a JSON object is expected"),
        (json.dumps({"min_instances": 1}), "'max_instances' is missing"),
        (None, "STOP finding (headroom: peak 9 over max 6)"),
        (json.dumps({"min_instances": 1.5, "max_instances": 3, "target_value": 2, "scale_in_value": 1,
                     "scale_out_cooldown_s": 60, "scale_in_cooldown_s": 300}), "not a whole number"),
    ],
)
def test_bad_plans_are_refused(
    moto: Moto, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, says: str
) -> None:
    if content is None:
        path = plan_file(tmp_path, findings=[{"level": "STOP", "name": "headroom", "detail": "peak 9 over max 6"}])
    else:
        path = tmp_path / "plan.json"
        path.write_text(content)
    assert main([*BASE, "--plan", str(path)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err, err
    assert moto.inventory() == EMPTY


def test_a_stop_plan_goes_with_force(moto: Moto, tmp_path: Path) -> None:
    path = plan_file(tmp_path, findings=[{"level": "STOP", "name": "slo", "detail": "p95 over the SLO"}])
    assert main([*BASE, "--plan", str(path), "--force"]) == 0
    assert len(scaling_state(moto)["targets"]) == 1  # type: ignore[arg-type]
    assert main(["down", "--name", "as", "--poll-interval", "0.05"]) == 0


def test_dry_run_prints_every_scaling_call_and_makes_none(
    moto: Moto, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BASE, "--plan", str(plan_file(tmp_path)), "--alarms", "--dashboard", "--dry-run"]) == 0
    out = capsys.readouterr().out
    for expected in ("application-autoscaling:RegisterScalableTarget", HIGH_RES_METRIC, '"DisableScaleIn": true',
                     '"PolicyType": "StepScaling"', "cloudwatch:PutMetricAlarm", "cloudwatch:PutDashboard",
                     "LEAST_OUTSTANDING_REQUESTS", "service-quotas:ListServiceQuotas", "FirstChunkLatency"):
        assert expected in out, expected
    assert scaling_state(moto) == {"targets": [], "policies": [], "alarms": [], "dashboards": []}
    assert main(["down", "--name", "as", "--dry-run"]) == 0
    down = capsys.readouterr().out
    assert down.index("DeregisterScalableTarget") < down.index("sagemaker:DeleteEndpoint")


def test_a_failure_after_the_endpoint_names_what_was_created_and_down_cleans_it(moto: Moto) -> None:
    from botocore.exceptions import ClientError

    from bidi_tts.fleet_plan import Policy as Autoscale
    from reference_container_deploy.aws import ApiCall, Aws, explain
    from reference_container_deploy.errors import DeployError
    from reference_container_deploy.up import UpOptions, run_up
    from reference_container_deploy.waiter import Polling

    class AlarmsDenied(Aws):
        def call(self, call: ApiCall) -> dict:
            if call.operation == "PutMetricAlarm":
                error = ClientError({"Error": {"Code": "AccessDenied", "Message": "no cloudwatch"}}, "PutMetricAlarm")
                raise explain(error, call) from error
            return super().call(call)

    opts = UpOptions(name="as", role_arn=ROLE_ARN, image=ECR_IMAGE, instance_type="ml.g4dn.xlarge",
                     skip_label_check=True, polling=Polling(timeout_s=5, interval_s=0.05),
                     autoscale=Autoscale(min_instances=1, max_instances=2, target_value=2, scale_in_value=1))
    with pytest.raises(DeployError) as err:
        run_up(opts, out=lambda _: None, aws_factory=AlarmsDenied)
    line = err.value.one_line()
    assert "access denied for cloudwatch:PutMetricAlarm" in line
    assert "scalable target endpoint/as-endpoint/variant/AllTraffic" in line and "down --name as" in line
    assert main(["down", "--name", "as", "--poll-interval", "0.05"]) == 0
    assert scaling_state(moto)["policies"] == [] and moto.inventory() == EMPTY


def test_down_without_cloudwatch_permissions_still_takes_a_plain_deployment_down(moto: Moto) -> None:
    from botocore.exceptions import ClientError

    from reference_container_deploy.aws import ApiCall, Aws, explain
    from reference_container_deploy.down import DownOptions, run_down
    from reference_container_deploy.waiter import Polling

    class NoCloudWatch(Aws):
        def call(self, call: ApiCall) -> dict:
            if call.service == "cloudwatch":
                error = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, call.operation)
                raise explain(error, call) from error
            return super().call(call)

    assert main([*BASE]) == 0  # no autoscaling
    lines: list[str] = []
    run_down(DownOptions(name="as", polling=Polling(timeout_s=5, interval_s=0.05)), lines.append,
             aws_factory=NoCloudWatch)
    assert moto.inventory() == EMPTY
    assert sum("not checked (access denied for cloudwatch:" in line for line in lines) == 2  # dashboard, alarms
