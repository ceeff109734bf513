"""AWS errors become one clear line with a fix; waiting reports progress, failure and timeouts."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from reference_container_deploy.aws import ApiCall, explain, is_not_found
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.names import derive_names
from reference_container_deploy.waiter import Polling, wait_in_service

CREATE_CONFIG = ApiCall("sagemaker", "CreateEndpointConfig", {})


def client_error(code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "CreateEndpointConfig")


@pytest.mark.parametrize(
    ("code", "message", "expect_in_message", "expect_in_fix"),
    [
        (
            "AccessDeniedException",
            "User: arn:aws:iam::1:user/x is not authorized to perform: sagemaker:CreateEndpointConfig",
            "access denied for sagemaker:CreateEndpointConfig",
            "docs/deploy.md",
        ),
        ("AccessDeniedException", "not authorized to perform: iam:PassRole", "access denied", "iam:PassRole"),
        (
            "ResourceLimitExceeded",
            "The account-level service limit 'ml.g5.xlarge for endpoint usage' is 0 Instances",
            "quota",
            "Service Quotas",
        ),
        (
            "ValidationException",
            'Cannot create already existing endpoint configuration "x-config".',
            "already exists",
            "down --name",
        ),
        (
            "ValidationException",
            "Could not assume role arn:aws:iam::1:role/r. Please ensure that the role exists",
            "execution role",
            "sagemaker.amazonaws.com",
        ),
        (
            "ExpiredTokenException",
            "The security token included in the request is expired",
            "rejected the credentials",
            "refresh",
        ),
    ],
)
def test_client_errors_explained(code: str, message: str, expect_in_message: str, expect_in_fix: str) -> None:
    error = explain(client_error(code, message), CREATE_CONFIG)
    assert expect_in_message in error.message
    assert error.fix and expect_in_fix in error.fix
    assert "\n" not in error.one_line()


def test_sdk_errors_explained_without_python_reprs() -> None:
    creds = explain(NoCredentialsError(), CREATE_CONFIG)
    assert creds.code == ExitCode.NO_CREDENTIALS and "aws configure" in (creds.fix or "")
    unreachable = explain(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), CREATE_CONFIG)
    assert unreachable.code == ExitCode.AWS_ERROR and "AWS_ENDPOINT_URL" in (unreachable.fix or "")
    other = explain(KeyError("secret internals"), CREATE_CONFIG)
    assert "secret internals" not in other.one_line()


def test_not_found_recognised() -> None:
    assert is_not_found(client_error("ValidationException", 'Could not find endpoint "x".'))
    assert is_not_found(ClientError({"Error": {"Code": "RepositoryNotFoundException", "Message": ""}}, "Op"))
    assert not is_not_found(client_error("ValidationException", "bad value"))


class ScriptedAws:
    """Answers DescribeEndpoint with the statuses given, one per call."""

    def __init__(self, *statuses: dict[str, Any]) -> None:
        self.statuses = list(statuses)
        self.calls = 0

    def call(self, call: ApiCall) -> dict[str, Any]:
        assert call.operation == "DescribeEndpoint"
        self.calls += 1
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_reports_progress_until_in_service() -> None:
    clock = FakeClock()
    aws = ScriptedAws(
        {"EndpointStatus": "Creating"}, {"EndpointStatus": "Creating"}, {"EndpointStatus": "InService"}
    )
    lines: list[str] = []
    wait_in_service(aws, derive_names("w"), Polling(600, 30, clock, clock.sleep), lines.append)  # type: ignore[arg-type]
    assert lines == [
        "  endpoint w-endpoint: Creating (0m00s)",
        "  ... still Creating (0m30s)",
        "  endpoint w-endpoint: InService (1m00s)",
    ]


def test_wait_times_out() -> None:
    clock = FakeClock()
    aws = ScriptedAws({"EndpointStatus": "Creating"})
    with pytest.raises(DeployError) as err:
        wait_in_service(aws, derive_names("w"), Polling(100, 30, clock, clock.sleep), lambda _: None)  # type: ignore[arg-type]
    assert err.value.code == ExitCode.TIMEOUT and aws.calls == 4
    assert err.value.log_group == "/aws/sagemaker/Endpoints/w-endpoint"


@pytest.mark.parametrize(
    ("reason", "fix_word"),
    [
        (
            "The primary container for production variant AllTraffic did not pass the ping health check.",
            "/ping",
        ),
        ("Unable to provision requested ML compute capacity.", "capacity"),
        ("Failed to pull image 1.dkr.ecr.us-east-1.amazonaws.com/x:y", "ecr:BatchGetImage"),
    ],
)
def test_failed_endpoint_gets_a_specific_fix(reason: str, fix_word: str) -> None:
    clock = FakeClock()
    aws = ScriptedAws({"EndpointStatus": "Failed", "FailureReason": reason})
    with pytest.raises(DeployError) as err:
        wait_in_service(aws, derive_names("f"), Polling(100, 30, clock, clock.sleep), lambda _: None)  # type: ignore[arg-type]
    assert err.value.code == ExitCode.ENDPOINT_FAILED
    assert reason in err.value.message and fix_word in (err.value.fix or "")
