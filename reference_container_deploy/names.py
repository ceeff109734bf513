"""Resource names derived from one `--name`, checked against SageMaker's and ECR's naming rules."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference_container_deploy.errors import DeployError, ExitCode

# SageMaker ModelName / EndpointConfigName / EndpointName: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}
_SAGEMAKER_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_MAX_SAGEMAKER_LEN = 63
MODEL_SUFFIX = "-model"
CONFIG_SUFFIX = "-config"
ENDPOINT_SUFFIX = "-endpoint"
# The longest suffix bounds how long --name may be.
MAX_NAME_LEN = _MAX_SAGEMAKER_LEN - max(len(MODEL_SUFFIX), len(CONFIG_SUFFIX), len(ENDPOINT_SUFFIX))
VARIANT_NAME = "AllTraffic"
TAG_KEY_DEPLOYMENT = "bidi-tts:deployment"
TAG_KEY_CREATED_BY = "bidi-tts:created-by"
CREATED_BY = "reference_container.deploy"


@dataclass(frozen=True, slots=True)
class DeploymentNames:
    """The SageMaker resource names of one deployment, so several deployments can coexist."""

    name: str
    model: str
    endpoint_config: str
    endpoint: str

    @property
    def log_group(self) -> str:
        """The CloudWatch log group SageMaker writes the endpoint's container logs to."""
        return f"/aws/sagemaker/Endpoints/{self.endpoint}"

    @property
    def ecr_repository(self) -> str:
        """The default ECR repository name for images built by `up --build`."""
        return self.name.lower()

    def tags(self) -> list[dict[str, str]]:
        """Tags put on every resource this deployment creates."""
        return [
            {"Key": TAG_KEY_DEPLOYMENT, "Value": self.name},
            {"Key": TAG_KEY_CREATED_BY, "Value": CREATED_BY},
        ]


def derive_names(name: str) -> DeploymentNames:
    """Derive `NAME-model`, `NAME-config`, `NAME-endpoint` from `name`, or raise a usage error."""
    if not name:
        raise DeployError(ExitCode.USAGE, "--name is empty.", "pass a name such as kokoro-tts.")
    if len(name) > MAX_NAME_LEN:
        raise DeployError(
            ExitCode.USAGE,
            f"--name {name!r} is {len(name)} characters; SageMaker names are at most "
            f"{_MAX_SAGEMAKER_LEN} and the tool adds up to {_MAX_SAGEMAKER_LEN - MAX_NAME_LEN}.",
            f"use at most {MAX_NAME_LEN} characters.",
        )
    if not _SAGEMAKER_NAME.fullmatch(name):
        raise DeployError(
            ExitCode.USAGE,
            f"--name {name!r} breaks SageMaker's naming rule: letters, digits and hyphens only, "
            "starting and ending with a letter or digit.",
            "use a name such as kokoro-tts.",
        )
    return DeploymentNames(
        name=name,
        model=name + MODEL_SUFFIX,
        endpoint_config=name + CONFIG_SUFFIX,
        endpoint=name + ENDPOINT_SUFFIX,
    )
