"""The SageMaker calls of a deployment, built once and then either printed (--dry-run) or run."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from reference_container_deploy.aws import ApiCall
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.names import VARIANT_NAME, DeploymentNames

DEFAULT_INSTANCE_TYPE = "ml.g5.xlarge"
# Kokoro loads and warms up before /ping turns 200; SageMaker's default (the minimum) is too tight for a
# cold GPU instance, and 600 s is well inside the 3600 s maximum.
DEFAULT_STARTUP_TIMEOUT_S = 600
ROUTING_STRATEGY = "LEAST_OUTSTANDING_REQUESTS"
_ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}")
_INSTANCE_TYPE = re.compile(r"ml\.[a-z0-9-]+\.[a-z0-9]+")
_ENV_KEY = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,1023}")


@dataclass(frozen=True, slots=True)
class EndpointSpec:
    """What to deploy: the settings of the model, endpoint config and endpoint."""

    image: str
    role_arn: str
    instance_type: str = DEFAULT_INSTANCE_TYPE
    instance_count: int = 1
    startup_timeout_s: int = DEFAULT_STARTUP_TIMEOUT_S
    environment: Mapping[str, str] = field(default_factory=dict)

    def validate(self) -> None:
        """Raise a usage error naming the first setting that SageMaker would reject."""
        if not _ROLE_ARN.fullmatch(self.role_arn):
            raise DeployError(
                ExitCode.USAGE,
                f"--role-arn {self.role_arn!r} is not an IAM role ARN.",
                "pass arn:aws:iam::ACCOUNT:role/NAME of a role SageMaker can assume.",
            )
        if not _INSTANCE_TYPE.fullmatch(self.instance_type):
            raise DeployError(
                ExitCode.USAGE,
                f"--instance-type {self.instance_type!r} is not a SageMaker instance type.",
                f"use a type such as {DEFAULT_INSTANCE_TYPE}.",
            )
        if not 1 <= self.instance_count <= 100:
            raise DeployError(ExitCode.USAGE, "--instance-count must be between 1 and 100.", None)
        if not 60 <= self.startup_timeout_s <= 3600:
            raise DeployError(ExitCode.USAGE, "--startup-timeout must be between 60 and 3600 s.", None)
        for key, value in self.environment.items():
            if not _ENV_KEY.fullmatch(key) or len(value) > 1024:
                raise DeployError(
                    ExitCode.USAGE,
                    f"environment variable {key!r} is not valid for SageMaker.",
                    "use KEY=VALUE with KEY of letters, digits and _ and VALUE of at most 1024 characters.",
                )


def create_calls(names: DeploymentNames, spec: EndpointSpec) -> list[ApiCall]:
    """CreateModel, CreateEndpointConfig, CreateEndpoint, in the order they must run."""
    tags = names.tags()
    return [
        ApiCall(
            "sagemaker",
            "CreateModel",
            {
                "ModelName": names.model,
                "ExecutionRoleArn": spec.role_arn,
                "PrimaryContainer": {
                    "Image": spec.image,
                    "Mode": "SingleModel",
                    "Environment": dict(spec.environment),
                },
                "Tags": tags,
            },
        ),
        ApiCall(
            "sagemaker",
            "CreateEndpointConfig",
            {
                "EndpointConfigName": names.endpoint_config,
                "ProductionVariants": [
                    {
                        "VariantName": VARIANT_NAME,
                        "ModelName": names.model,
                        "InstanceType": spec.instance_type,
                        "InitialInstanceCount": spec.instance_count,
                        "InitialVariantWeight": 1.0,
                        "ContainerStartupHealthCheckTimeoutInSeconds": spec.startup_timeout_s,
                        # A streaming session holds an instance for its whole length: route each new one
                        # to the instance with the fewest in flight, not at random.
                        "RoutingConfig": {"RoutingStrategy": ROUTING_STRATEGY},
                    }
                ],
                "Tags": tags,
            },
        ),
        ApiCall(
            "sagemaker",
            "CreateEndpoint",
            {"EndpointName": names.endpoint, "EndpointConfigName": names.endpoint_config, "Tags": tags},
        ),
    ]


def describe_endpoint(names: DeploymentNames) -> ApiCall:
    """The DescribeEndpoint call used to wait for InService or for deletion."""
    return ApiCall("sagemaker", "DescribeEndpoint", {"EndpointName": names.endpoint})
