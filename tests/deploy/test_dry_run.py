"""--dry-run prints the calls it would make and makes none."""

from __future__ import annotations

import json

import pytest

from reference_container_deploy.down import DownOptions, run_down
from reference_container_deploy.up import UpOptions, run_up
from tests.deploy.conftest import ECR_IMAGE, EMPTY, ROLE_ARN, Moto


def test_cli_dry_run_up_and_down_make_no_calls(moto: Moto) -> None:
    up = moto.run_cli("up", "--name", "dry", "--image", ECR_IMAGE, "--role-arn", ROLE_ARN, "--dry-run")
    assert up.returncode == 0, up.stderr
    calls = [line.strip() for line in up.stdout.splitlines() if line.strip().startswith("sagemaker:")]
    assert [c.split(" ", 1)[0] for c in calls] == [
        "sagemaker:CreateModel",
        "sagemaker:CreateEndpointConfig",
        "sagemaker:CreateEndpoint",
        "sagemaker:DescribeEndpoint",
    ]
    model = json.loads(calls[0].split(" ", 1)[1])
    assert model["ModelName"] == "dry-model" and model["PrimaryContainer"]["Image"] == ECR_IMAGE
    config = json.loads(calls[1].split(" ", 1)[1])
    assert config["ProductionVariants"][0]["InstanceType"] == "ml.g5.xlarge"
    assert "check label" in up.stdout

    down = moto.run_cli("down", "--name", "dry", "--purge", "--dry-run")
    assert down.returncode == 0, down.stderr
    order = [
        op
        for op in (
            "DeleteEndpoint ",
            "DeleteEndpointConfig",
            "DeleteModel",
            "ecr:DeleteRepository",
            "logs:DeleteLogGroup",
        )
        if op in down.stdout
    ]
    assert len(order) == 5
    assert [down.stdout.index(op) for op in order] == sorted(down.stdout.index(op) for op in order)
    assert moto.inventory() == EMPTY


def test_cli_dry_run_with_a_deployment_present_changes_nothing(moto: Moto) -> None:
    assert (
        moto.run_cli(
            "up",
            "--name",
            "keep",
            "--image",
            ECR_IMAGE,
            "--role-arn",
            ROLE_ARN,
            "--instance-type",
            "ml.m5.large",
            "--skip-label-check",
            "--no-wait",
        ).returncode
        == 0
    )
    before = moto.inventory()
    assert moto.run_cli("down", "--name", "keep", "--dry-run").returncode == 0
    assert moto.inventory() == before


def test_dry_run_creates_no_client(moto: Moto, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: any boto3 client creation or docker run would fail the test."""
    import boto3.session

    def no_client(*args, **kwargs):
        raise AssertionError("dry run created an AWS client")

    def no_command(*args, **kwargs):
        raise AssertionError("dry run ran a command")

    monkeypatch.setattr(boto3.session.Session, "client", no_client)
    lines: list[str] = []
    run_up(
        UpOptions(name="dry", role_arn=ROLE_ARN, build=True, dry_run=True), lines.append, runner=no_command
    )
    text = "\n".join(lines)
    assert "docker/build-image.sh" in text or "local: docker build -f" in text
    assert "ecr:CreateRepository" in text and "docker push" in text
    run_down(DownOptions(name="dry", purge=True, dry_run=True), lines.append)
    monkeypatch.undo()
    assert moto.inventory() == EMPTY
