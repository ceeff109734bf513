"""boto3 clients from the standard AWS configuration, and AWS errors turned into one clear line.

Credentials come from the SDK's chain; endpoints honour the SDK's own override variables
(`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_SAGEMAKER`, `AWS_ENDPOINT_URL_ECR`, ...), so a local emulator
such as moto can stand in for AWS without any option of ours.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_container_deploy.errors import DeployError, ExitCode

PERMISSIONS_DOC = "docs/deploy.md (IAM permissions)"


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One AWS API call: printed by --dry-run, executed otherwise. Same object either way."""

    service: str
    operation: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """`service:Operation {params}` as --dry-run prints it."""
        return f"{self.service}:{self.operation} {json.dumps(self.params, sort_keys=True, default=str)}"


def resolve_region(region: str | None) -> str:
    """--region, else the SDK's configuration (AWS_DEFAULT_REGION, profile), else AWS_REGION."""
    import boto3

    found = region or boto3.session.Session().region_name or os.environ.get("AWS_REGION")
    if not found:
        raise DeployError(
            ExitCode.USAGE,
            "no AWS region configured.",
            "pass --region (e.g. --region us-east-1) or set AWS_REGION.",
        )
    return found


class Aws:
    """Lazily created boto3 clients for one region; `call` runs an `ApiCall` and explains failures."""

    def __init__(self, region: str | None) -> None:
        import boto3

        self.region = resolve_region(region)
        self._session = boto3.session.Session(region_name=self.region)
        self._clients: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        """The boto3 client for `service` (endpoint overrides come from the environment)."""
        if service not in self._clients:
            self._clients[service] = self._session.client(service, region_name=self.region)
        return self._clients[service]

    def call(self, call: ApiCall) -> dict[str, Any]:
        """Run `call`; an AWS failure becomes a `DeployError` with one line and the fix."""
        from botocore import xform_name

        method = getattr(self.client(call.service), xform_name(call.operation))
        try:
            return method(**call.params)
        except Exception as exc:
            raise explain(exc, call) from exc


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError, else None."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", "")) or None
    return None


def error_message(exc: BaseException) -> str:
    """The AWS error message of a botocore ClientError (AWS's words, not a Python repr)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Message", "")).strip()
    return ""


def is_not_found(exc: BaseException) -> bool:
    """True for SageMaker's and ECR's 'does not exist' answers."""
    code = error_code(exc) or ""
    if code in {"ResourceNotFound", "RepositoryNotFoundException", "ResourceNotFoundException",
                "ObjectNotFoundException"}:
        return True
    message = error_message(exc).lower()
    # SageMaker says "Could not find ..."; Application Auto Scaling (moto's) "No scalable target found ..."
    return code in {"ValidationException", "ValidationError"} and (
        "could not find" in message or ("no scal" in message and "found" in message)
    )


def explain(exc: BaseException, call: ApiCall) -> DeployError:
    """Turn a boto3/botocore exception into a `DeployError`: what failed, then how to fix it."""
    from botocore import exceptions as bx

    action = f"{call.service}:{call.operation}"
    if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError):
        return DeployError(
            ExitCode.NO_CREDENTIALS,
            f"no AWS credentials found for {action}.",
            "configure credentials (aws configure, AWS_PROFILE, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY).",
        )
    if isinstance(exc, bx.EndpointConnectionError | bx.ConnectTimeoutError | bx.ReadTimeoutError):
        return DeployError(
            ExitCode.AWS_ERROR,
            f"cannot reach the AWS endpoint for {action}.",
            "check the network, --region, and AWS_ENDPOINT_URL* if you point at an emulator.",
        )
    code = error_code(exc)
    if code is None:
        return DeployError(ExitCode.AWS_ERROR, f"{action} failed ({type(exc).__name__}).", None)
    message = error_message(exc)
    lowered = message.lower()
    if code in {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "UnrecognizedClientException",
    }:
        if "passrole" in lowered:
            fix = "allow iam:PassRole on the --role-arn role for your identity; see " + PERMISSIONS_DOC
        else:
            fix = f"grant {action} to your identity; see {PERMISSIONS_DOC}."
        return DeployError(ExitCode.AWS_ERROR, f"access denied for {action}: {message}", fix)
    if code in {"ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "InvalidSignatureException"}:
        return DeployError(
            ExitCode.NO_CREDENTIALS,
            f"AWS rejected the credentials for {action}: {message}",
            "refresh your credentials (aws sso login, or new keys).",
        )
    if code == "ResourceLimitExceeded":
        return DeployError(
            ExitCode.AWS_ERROR,
            f"SageMaker quota reached for {action}: {message}",
            "request an increase of '<instance type> for endpoint usage' in Service Quotas "
            "(Amazon SageMaker), lower --instance-count, or pick another --instance-type.",
        )
    if code in {"ThrottlingException", "Throttling", "TooManyRequestsException"}:
        return DeployError(ExitCode.AWS_ERROR, f"AWS throttled {action}.", "wait a minute and retry.")
    if "already exist" in lowered:
        return DeployError(
            ExitCode.AWS_ERROR,
            f"{action}: the resource already exists ({message}).",
            "run `python -m reference_container.deploy down --name NAME` first, or pick another --name.",
        )
    if "role" in lowered and ("assume" in lowered or "passrole" in lowered or "not authorized" in lowered):
        return DeployError(
            ExitCode.AWS_ERROR,
            f"{action}: the execution role cannot be used ({message}).",
            "give --role-arn a role that trusts sagemaker.amazonaws.com, and allow iam:PassRole on it.",
        )
    return DeployError(ExitCode.AWS_ERROR, f"{action} failed: {code}: {message}", None)
