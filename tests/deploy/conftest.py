"""Fixtures for the deploy tests: a moto server on 127.0.0.1 (free port) and AWS settings pointing at it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.sagemaker import models as sagemaker_models
from moto.server import ThreadedMotoServer

from bidi_tts.local_container import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/SageMakerExecution"
ECR_IMAGE = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/kokoro-tts:v1"


@dataclass
class Moto:
    """A running moto server and the environment that points the AWS SDK at it."""

    url: str
    env: dict[str, str]

    def client(self, service: str) -> Any:
        return boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        ).client(service, endpoint_url=self.url)

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass

    def run_cli(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run the real CLI as a subprocess, as a user would."""
        return subprocess.run(
            [sys.executable, "-m", "reference_container.deploy", *args],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def inventory(self) -> dict[str, list[str]]:
        """Every resource the deploy tool could have created, by kind."""
        sm, ecr, logs = self.client("sagemaker"), self.client("ecr"), self.client("logs")
        return {
            "models": [m["ModelName"] for m in sm.list_models()["Models"]],
            "endpoint_configs": [
                c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]
            ],
            "endpoints": [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]],
            "repositories": [r["repositoryName"] for r in ecr.describe_repositories()["repositories"]],
            "log_groups": [g["logGroupName"] for g in logs.describe_log_groups()["logGroups"]],
        }


EMPTY: dict[str, list[str]] = {
    "models": [],
    "endpoint_configs": [],
    "endpoints": [],
    "repositories": [],
    "log_groups": [],
}


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Moto]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    empty = tmp_path_factory.mktemp("aws") / "none"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ENDPOINT_URL=url,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION=REGION,
        AWS_CONFIG_FILE=str(empty),
        AWS_SHARED_CREDENTIALS_FILE=str(empty),
        AWS_EC2_METADATA_DISABLED="true",
    )
    try:
        yield Moto(url=url, env=env)
    finally:
        server.stop()


@pytest.fixture
def moto(moto_server: Moto, monkeypatch: pytest.MonkeyPatch) -> Moto:
    """A clean moto server, with this process's AWS settings pointing at it."""
    moto_server.reset()
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    for key, value in moto_server.env.items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    return moto_server


@pytest.fixture
def allow_g5(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto 5.2.5 rejects ml.g5.* in CreateEndpointConfig; SageMaker accepts them. Extend moto's list.

    The moto server runs in this process (a thread), so patching its validator here also covers
    the CLI subprocesses that talk to it.
    """
    original = sagemaker_models.FakeEndpointConfig.validate_instance_type

    def validate(self: Any, instance_type: str) -> None:
        if not instance_type.startswith("ml.g5."):
            original(self, instance_type)

    monkeypatch.setattr(sagemaker_models.FakeEndpointConfig, "validate_instance_type", validate)


def docker_engine_available() -> bool:
    """True when the docker CLI is installed and an engine answers."""
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        return subprocess.run([docker, "info"], capture_output=True, timeout=15, check=False).returncode == 0
    except subprocess.TimeoutExpired:
        return False
