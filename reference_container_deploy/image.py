"""Build the reference image with `docker build`, and push it (to ECR: repository created, token login)."""

from __future__ import annotations

import base64
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from reference_container_deploy.aws import ApiCall, Aws, is_not_found
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.imageref import ImageRef

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DOCKERFILE = REPO_ROOT / "reference_container" / "Dockerfile"
BUILD_SCRIPT = REPO_ROOT / "docker" / "build-image.sh"
# build-image.sh takes these as environment variables; other build args go to docker build.
_SCRIPT_ENV_ARGS = {"BASE_IMAGE", "KOKORO_ROUTE", "KOKORO_VOICES_SRC", "BUILD_CA_BUNDLE"}
_BUILD_TIMEOUT_S = 3600.0
_PUSH_TIMEOUT_S = 3600.0

Runner = Callable[[Sequence[str], str | None, float], int]
"""Run argv (with optional stdin text) within a time limit; return its exit status."""


def run_command(argv: Sequence[str], stdin: str | None, timeout_s: float) -> int:
    """Run a command with its output going to the terminal (docker's own progress)."""
    try:
        return subprocess.run(list(argv), input=stdin, text=True, timeout=timeout_s, check=False).returncode
    except subprocess.TimeoutExpired:
        return 124


def docker_cli() -> str:
    """The docker executable, or a BUILD error saying how to do without it."""
    docker = shutil.which("docker")
    if docker is None:
        raise DeployError(
            ExitCode.BUILD,
            "--build needs the docker CLI and a Docker engine, and docker is not installed.",
            "install Docker, or build and push elsewhere and pass the image with --image (no --build).",
        )
    return docker


def build_argv(
    docker: str, uri: str, dockerfile: Path, context: Path, build_args: Sequence[str]
) -> list[str]:
    """The build command line: docker/build-image.sh for the reference image, else `docker build`.

    The script stages what the Dockerfile copies but git does not hold (voice packs) and builds the
    local base image when missing, so the reference Dockerfile goes through it.
    """
    if (
        dockerfile.resolve() == DEFAULT_DOCKERFILE
        and context.resolve() == REPO_ROOT
        and BUILD_SCRIPT.is_file()
    ):
        env = [f"IMAGE={uri}"]
        extra: list[str] = []
        for arg in build_args:
            key = arg.partition("=")[0]
            if key in _SCRIPT_ENV_ARGS:
                env.append(arg)
            else:
                extra += ["--build-arg", arg]
        return ["env", *env, "bash", str(BUILD_SCRIPT), *extra]
    argv = [docker, "build", "-f", str(dockerfile), "-t", uri]
    for arg in build_args:
        argv += ["--build-arg", arg]
    return [*argv, str(context)]


def build(
    uri: str, dockerfile: Path, context: Path, build_args: Sequence[str], run: Runner = run_command
) -> None:
    """`docker build -f DOCKERFILE -t URI CONTEXT`, or a BUILD error."""
    if not dockerfile.is_file():
        raise DeployError(
            ExitCode.BUILD,
            f"Dockerfile {dockerfile} does not exist.",
            "pass --dockerfile, or build the image yourself and pass --image without --build.",
        )
    status = run(build_argv(docker_cli(), uri, dockerfile, context, build_args), None, _BUILD_TIMEOUT_S)
    if status != 0:
        raise DeployError(
            ExitCode.BUILD,
            f"docker build failed (exit {status}).",
            "read the build output above; docker/build-image.sh documents how to build the base image here.",
        )


def ensure_repository_calls(image: ImageRef, tags: list[dict[str, str]]) -> tuple[ApiCall, ApiCall]:
    """DescribeRepositories (does it exist?) and CreateRepository (when it does not)."""
    registry = {"registryId": image.ecr_account} if image.ecr_account else {}
    describe = ApiCall("ecr", "DescribeRepositories", {**registry, "repositoryNames": [image.repository]})
    create = ApiCall(
        "ecr",
        "CreateRepository",
        {
            **registry,
            "repositoryName": image.repository,
            "imageScanningConfiguration": {"scanOnPush": True},
            "tags": [{"Key": t["Key"], "Value": t["Value"]} for t in tags],
        },
    )
    return describe, create


def ensure_repository(
    aws: Aws, image: ImageRef, tags: list[dict[str, str]], out: Callable[[str], None]
) -> bool:
    """Create the ECR repository of `image` when missing; True when it was created now."""
    describe, create = ensure_repository_calls(image, tags)
    try:
        aws.call(describe)
    except DeployError as exc:
        if exc.__cause__ is None or not is_not_found(exc.__cause__):
            raise
        aws.call(create)
        out(f"created ECR repository {image.repository}")
        return True
    out(f"ECR repository {image.repository} exists")
    return False


def authorization_call(image: ImageRef) -> ApiCall:
    """GetAuthorizationToken for the registry of an ECR image."""
    return ApiCall(
        "ecr", "GetAuthorizationToken", {"registryIds": [image.ecr_account]} if image.ecr_account else {}
    )


def ecr_credentials(aws: Aws, image: ImageRef) -> tuple[str, str]:
    """(user, password) for the ECR registry of `image`, from its authorization token."""
    answer = aws.call(authorization_call(image))
    data = answer.get("authorizationData") or []
    if not data:
        raise DeployError(
            ExitCode.AWS_ERROR,
            "ECR returned no authorization token.",
            "retry; check ecr:GetAuthorizationToken.",
        )
    user, _, password = base64.b64decode(data[0]["authorizationToken"]).decode().partition(":")
    return user, password


def login(aws: Aws, image: ImageRef, run: Runner = run_command) -> None:
    """`docker login` to the ECR registry of `image` with the ECR token (password on stdin)."""
    user, password = ecr_credentials(aws, image)
    status = run(
        [docker_cli(), "login", "--username", user, "--password-stdin", image.registry], password, 120.0
    )
    if status != 0:
        raise DeployError(ExitCode.BUILD, f"docker login to {image.registry} failed (exit {status}).", None)


def push(uri: str, run: Runner = run_command) -> None:
    """`docker push URI`, or a BUILD error."""
    status = run([docker_cli(), "push", uri], None, _PUSH_TIMEOUT_S)
    if status != 0:
        raise DeployError(
            ExitCode.BUILD,
            f"docker push {uri} failed (exit {status}).",
            "check that you may push to the repository (ecr:InitiateLayerUpload, ecr:UploadLayerPart, "
            "ecr:CompleteLayerUpload, ecr:PutImage, ecr:BatchCheckLayerAvailability).",
        )
