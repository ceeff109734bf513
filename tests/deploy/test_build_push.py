"""`up --build` against moto: ECR repository created when missing, token login, push, then deploy."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from reference_container_deploy import image as image_ops
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.labels import Inspection
from reference_container_deploy.up import UpOptions, run_up
from reference_container_deploy.waiter import Polling
from tests.deploy.conftest import ACCOUNT, ECR_IMAGE, REGION, ROLE_ARN, Moto


class Recorder:
    """Stands in for the docker CLI: records each command line and its stdin, answers `status`."""

    def __init__(self, status: int = 0) -> None:
        self.commands: list[tuple[list[str], str | None]] = []
        self.status = status

    def __call__(self, argv: Sequence[str], stdin: str | None, timeout_s: float) -> int:
        self.commands.append((list(argv), stdin))
        return self.status


def labelled(image, uri):
    return Inspection("test", labels={"com.amazonaws.sagemaker.capabilities.bidirectional-streaming": "true"})


@pytest.fixture(autouse=True)
def docker_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_ops, "docker_cli", lambda: "docker")


def test_build_creates_repository_logs_in_and_pushes(moto: Moto, tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM scratch\n")
    runner = Recorder()
    lines: list[str] = []
    run_up(
        UpOptions(
            name="built",
            role_arn=ROLE_ARN,
            image=ECR_IMAGE,
            build=True,
            dockerfile=dockerfile,
            context=tmp_path,
            instance_type="ml.m5.large",
            polling=Polling(10, 0.05),
        ),
        lines.append,
        [labelled],
        runner,
    )
    build, login, push = runner.commands
    assert build[0] == ["docker", "build", "-f", str(dockerfile), "-t", ECR_IMAGE, str(tmp_path)]
    registry = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
    assert login == (
        ["docker", "login", "--username", "AWS", "--password-stdin", registry],
        f"{ACCOUNT}-auth-token",
    )
    assert push == (["docker", "push", ECR_IMAGE], None)
    ecr = moto.client("ecr")
    [repo] = ecr.describe_repositories()["repositories"]
    assert repo["repositoryName"] == "kokoro-tts"
    tags = ecr.list_tags_for_resource(resourceArn=repo["repositoryArn"])["tags"]
    assert {"Key": "bidi-tts:created-by", "Value": "reference_container.deploy"} in tags
    assert "created ECR repository kokoro-tts" in lines
    assert (
        moto.client("sagemaker").describe_model(ModelName="built-model")["PrimaryContainer"]["Image"]
        == ECR_IMAGE
    )

    # A second build reuses the repository.
    moto.client("sagemaker").delete_endpoint(EndpointName="built-endpoint")
    run_up(
        UpOptions(
            name="again",
            role_arn=ROLE_ARN,
            image=ECR_IMAGE,
            build=True,
            dockerfile=dockerfile,
            context=tmp_path,
            instance_type="ml.m5.large",
            wait=False,
        ),
        lines.append,
        [labelled],
        Recorder(),
    )
    assert "ECR repository kokoro-tts exists" in lines


def test_build_without_image_names_it_in_the_callers_ecr(moto: Moto, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    runner = Recorder()
    run_up(
        UpOptions(
            name="auto-named",
            role_arn=ROLE_ARN,
            build=True,
            dockerfile=tmp_path / "Dockerfile",
            context=tmp_path,
            instance_type="ml.m5.large",
            wait=False,
        ),
        lambda _: None,
        [labelled],
        runner,
    )
    pushed = runner.commands[-1][0][-1]
    assert pushed.startswith(f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/auto-named:")
    image = moto.client("sagemaker").describe_model(ModelName="auto-named-model")["PrimaryContainer"]["Image"]
    assert image == pushed


def test_failed_build_stops_before_aws(moto: Moto, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    with pytest.raises(DeployError) as err:
        run_up(
            UpOptions(
                name="broken",
                role_arn=ROLE_ARN,
                image=ECR_IMAGE,
                build=True,
                dockerfile=tmp_path / "Dockerfile",
                context=tmp_path,
            ),
            lambda _: None,
            [labelled],
            Recorder(status=1),
        )
    assert err.value.code == ExitCode.BUILD
    assert moto.client("sagemaker").list_models()["Models"] == []
    assert moto.client("ecr").describe_repositories()["repositories"] == []


def test_reference_dockerfile_builds_through_the_build_script() -> None:
    argv = image_ops.build_argv(
        "docker", "r:1", image_ops.DEFAULT_DOCKERFILE, image_ops.REPO_ROOT, ["KOKORO_ROUTE=hub", "X=1"]
    )
    if not image_ops.BUILD_SCRIPT.is_file():
        pytest.skip("docker/build-image.sh is not in this checkout")
    assert argv == [
        "env",
        "IMAGE=r:1",
        "KOKORO_ROUTE=hub",
        "bash",
        str(image_ops.BUILD_SCRIPT),
        "--build-arg",
        "X=1",
    ]
