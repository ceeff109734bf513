"""`up` then `down` against a moto server: exactly the expected resources, with the expected settings."""

from __future__ import annotations

import pytest

from reference_container_deploy.down import DownOptions, run_down
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.labels import Inspection
from reference_container_deploy.up import UpOptions, run_up
from reference_container_deploy.waiter import Polling
from tests.deploy.conftest import ACCOUNT, ECR_IMAGE, EMPTY, REGION, ROLE_ARN, Moto

FAST = Polling(timeout_s=10.0, interval_s=0.05)
TAGS = [
    {"Key": "bidi-tts:deployment", "Value": "kokoro-tts"},
    {"Key": "bidi-tts:created-by", "Value": "reference_container.deploy"},
]


def labelled(image, uri):
    return Inspection(
        "test inspector", labels={"com.amazonaws.sagemaker.capabilities.bidirectional-streaming": "true"}
    )


def assert_deployed(moto: Moto, name: str, instance_type: str, count: int = 1) -> None:
    sm = moto.client("sagemaker")
    model = sm.describe_model(ModelName=f"{name}-model")
    assert model["ExecutionRoleArn"] == ROLE_ARN
    assert model["PrimaryContainer"]["Image"] == ECR_IMAGE
    env = model["PrimaryContainer"]["Environment"]
    assert env["DEFAULT_VOICE"] == "af_heart"
    assert int(env["MAX_TEXT_CHARS"]) >= 1000
    config = sm.describe_endpoint_config(EndpointConfigName=f"{name}-config")
    [variant] = config["ProductionVariants"]
    assert variant["ModelName"] == f"{name}-model"
    assert variant["InstanceType"] == instance_type
    assert variant["InitialInstanceCount"] == count
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 600
    endpoint = sm.describe_endpoint(EndpointName=f"{name}-endpoint")
    assert endpoint["EndpointConfigName"] == f"{name}-config"
    assert endpoint["EndpointStatus"] == "InService"
    tags = sm.list_tags(ResourceArn=model["ModelArn"])["Tags"]
    assert {"Key": "bidi-tts:deployment", "Value": name} in tags


def test_cli_up_then_down_default_instance_type(moto: Moto, allow_g5: None) -> None:
    up = moto.run_cli(
        "up",
        "--name",
        "kokoro-tts",
        "--image",
        ECR_IMAGE,
        "--role-arn",
        ROLE_ARN,
        "--skip-label-check",
        "--poll-interval",
        "0.05",
    )
    assert up.returncode == 0, up.stderr
    assert moto.inventory() == {
        **EMPTY,
        "models": ["kokoro-tts-model"],
        "endpoint_configs": ["kokoro-tts-config"],
        "endpoints": ["kokoro-tts-endpoint"],
    }
    assert_deployed(moto, "kokoro-tts", "ml.g5.xlarge")
    assert "InService" in up.stdout
    assert f"uv run pytest conformance --endpoint-name kokoro-tts-endpoint --region {REGION}" in up.stdout
    assert "uv run locust -f loadtest/locustfile.py --endpoint-name kokoro-tts-endpoint" in up.stdout

    down = moto.run_cli("down", "--name", "kokoro-tts", "--poll-interval", "0.05")
    assert down.returncode == 0, down.stderr
    assert moto.inventory() == EMPTY
    out = down.stdout
    # The order SageMaker needs: endpoint (gone) before its config, config before the model.
    assert (
        out.index("endpoint kokoro-tts-endpoint: deleted")
        < out.index("deleted endpoint config")
        < out.index("deleted model")
    )
    assert "kept: ECR repository kokoro-tts" in out


def test_cli_up_other_instance_type_and_count_and_region(moto: Moto) -> None:
    up = moto.run_cli(
        "up",
        "--name",
        "k2",
        "--image",
        ECR_IMAGE,
        "--role-arn",
        ROLE_ARN,
        "--instance-type",
        "ml.g4dn.xlarge",
        "--instance-count",
        "2",
        "--region",
        REGION,
        "--skip-label-check",
        "--no-wait",
    )
    assert up.returncode == 0, up.stderr
    assert_deployed(moto, "k2", "ml.g4dn.xlarge", count=2)
    assert "not waiting" in up.stdout
    assert moto.run_cli("down", "--name", "k2", "--region", REGION, "--poll-interval", "0.05").returncode == 0
    assert moto.inventory() == EMPTY


def test_in_process_deployments_coexist_and_purge(moto: Moto, allow_g5: None) -> None:
    moto.client("ecr").create_repository(repositoryName="kokoro-tts")
    moto.client("logs").create_log_group(logGroupName="/aws/sagemaker/Endpoints/a-endpoint")
    lines: list[str] = []
    for name in ("a", "b"):
        run_up(
            UpOptions(name=name, role_arn=ROLE_ARN, image=ECR_IMAGE, polling=FAST), lines.append, [labelled]
        )
    assert sorted(moto.inventory()["endpoints"]) == ["a-endpoint", "b-endpoint"]
    assert any("label ok" in line and "test inspector" in line for line in lines)

    run_down(DownOptions(name="a", purge=True, polling=FAST), lines.append)
    left = moto.inventory()
    assert left["models"] == ["b-model"] and left["endpoints"] == ["b-endpoint"]
    assert left["repositories"] == [] and left["log_groups"] == []
    assert f"deleted ECR repository kokoro-tts (account {ACCOUNT}) and its images" in lines

    run_down(DownOptions(name="b", polling=FAST), lines.append)
    assert moto.inventory() == EMPTY
    # down twice is safe: nothing left, nothing fails.
    run_down(DownOptions(name="b", polling=FAST), lines.append)
    assert "endpoint b-endpoint: not found, nothing to delete" in lines


def test_missing_label_is_refused_and_nothing_is_created(moto: Moto) -> None:
    def unlabelled(image, uri):
        return Inspection("test inspector", labels={"maintainer": "someone"})

    with pytest.raises(DeployError) as err:
        run_up(
            UpOptions(name="nolabel", role_arn=ROLE_ARN, image=ECR_IMAGE, polling=FAST), print, [unlabelled]
        )
    assert err.value.code == ExitCode.LABEL
    assert (
        "label com.amazonaws.sagemaker.capabilities.bidirectional-streaming is missing" in err.value.message
    )
    assert moto.inventory() == EMPTY


def test_cli_refuses_an_image_it_cannot_inspect(moto: Moto) -> None:
    # A loopback registry that does not exist and (here) no local copy: the tool cannot see the label.
    from tests.deploy.conftest import free_port

    image = f"127.0.0.1:{free_port()}/kokoro-tts:v1"
    result = moto.run_cli("up", "--name", "cannot", "--image", image, "--role-arn", ROLE_ARN)
    assert result.returncode == ExitCode.LABEL
    assert "cannot inspect image" in result.stderr and "--skip-label-check" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert moto.inventory() == EMPTY


def test_failed_endpoint_prints_reason_and_log_group(
    moto: Moto, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from moto.sagemaker import models

    original = models.FakeEndpoint.__init__

    def failing(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.endpoint_status = "Failed"
        self.failure_reason = (
            "The primary container for production variant AllTraffic did not pass the ping health check."
        )

    monkeypatch.setattr(models.FakeEndpoint, "__init__", failing)
    from reference_container_deploy.cli import main

    code = main(
        [
            "up",
            "--name",
            "fails",
            "--image",
            ECR_IMAGE,
            "--role-arn",
            ROLE_ARN,
            "--instance-type",
            "ml.g4dn.xlarge",
            "--skip-label-check",
            "--poll-interval",
            "0.05",
        ]
    )
    err = capsys.readouterr().err
    assert code == ExitCode.ENDPOINT_FAILED
    first, second = err.strip().splitlines()
    assert "did not pass the ping health check" in first and "Fix:" in first and "--startup-timeout" in first
    assert "created so far" in first and "down --name fails" in first
    assert second == "logs: CloudWatch log group /aws/sagemaker/Endpoints/fails-endpoint"


def test_aws_rejection_is_one_line(moto: Moto, capsys: pytest.CaptureFixture[str]) -> None:
    # moto enforces CreateEndpointConfig's instance-type enum; the tool turns the rejection into one line.
    from reference_container_deploy.cli import main

    code = main(
        [
            "up",
            "--name",
            "bad-type",
            "--image",
            ECR_IMAGE,
            "--role-arn",
            ROLE_ARN,
            "--instance-type",
            "ml.zz9.huge",
            "--skip-label-check",
        ]
    )
    err = capsys.readouterr().err
    assert code == ExitCode.AWS_ERROR
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: sagemaker:CreateEndpointConfig failed: ValidationException")
    assert "down --name bad-type" in err
    assert moto.inventory()["models"] == ["bad-type-model"]
