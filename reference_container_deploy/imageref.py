"""Parse container image references (`registry/repo:tag@digest`) and recognise ECR ones."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference_container_deploy.errors import DeployError, ExitCode

_ECR_HOST = re.compile(
    r"(?P<account>\d{12})\.dkr\.ecr(-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?"
)
_REPO = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
DOCKER_HUB = "registry-1.docker.io"


@dataclass(frozen=True, slots=True)
class ImageRef:
    """A parsed image reference. `reference` is the tag or digest a registry's manifest API takes."""

    registry: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def reference(self) -> str:
        """What to ask the registry's manifest endpoint for: the digest when given, else the tag."""
        return self.digest or self.tag or "latest"

    @property
    def ecr_account(self) -> str | None:
        """The AWS account of an ECR registry, or None for other registries."""
        match = _ECR_HOST.fullmatch(self.registry)
        return match["account"] if match else None

    @property
    def ecr_region(self) -> str | None:
        """The AWS region of an ECR registry, or None for other registries."""
        match = _ECR_HOST.fullmatch(self.registry)
        return match["region"] if match else None

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_image(uri: str) -> ImageRef:
    """Parse `uri` the way Docker does, or raise a usage error that says what is wrong."""
    rest, _, digest = uri.partition("@")
    first, slash, remainder = rest.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
    else:
        registry, path = DOCKER_HUB, rest
        if "/" not in path:
            path = f"library/{path}"
    repository, tag = path, None
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = path.rsplit(":", 1)
    if (
        not _REPO.fullmatch(repository)
        or (tag is not None and not _TAG.fullmatch(tag))
        or (digest and not re.fullmatch(r"[a-z0-9]+:[a-f0-9]{32,}", digest))
    ):
        raise DeployError(
            ExitCode.USAGE,
            f"--image {uri!r} is not a valid image reference.",
            "use REGISTRY/REPOSITORY:TAG, e.g. 123456789012.dkr.ecr.us-east-1.amazonaws.com/kokoro:latest.",
        )
    return ImageRef(registry=registry, repository=repository, tag=tag, digest=digest or None)


def ecr_uri(account: str, region: str, repository: str, tag: str = "latest") -> str:
    """The image URI of `repository:tag` in the ECR registry of `account` in `region`."""
    suffix = ".amazonaws.com.cn" if region.startswith("cn-") else ".amazonaws.com"
    return f"{account}.dkr.ecr.{region}{suffix}/{repository}:{tag}"
