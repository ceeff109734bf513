"""With a Docker engine: inspect a local image, build + push with `up --build` to a loopback registry.

Skipped, with the reason, where no engine answers (as on the shared CI machines here).
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from bidi_tts.protocol import BIDI_LABEL
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.imageref import parse_image
from reference_container_deploy.labels import RegistryInspector, docker_inspector
from reference_container_deploy.up import UpOptions, run_up
from reference_container_deploy.waiter import Polling
from tests.deploy.conftest import EMPTY, ROLE_ARN, Moto, docker_engine_available
from tests.deploy.registry import REGISTRY_BINARY, local_registry

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not docker_engine_available(), reason="no Docker engine answers `docker info`"),
]


def _dockerfile(tmp: Path, labelled: bool) -> Path:
    path = tmp / "Dockerfile"
    path.write_text("FROM scratch\n" + (f"LABEL {BIDI_LABEL}=true\n" if labelled else "LABEL purpose=test\n"))
    return path


def _build(tmp: Path, tag: str, labelled: bool) -> None:
    subprocess.run(
        ["docker", "build", "-q", "-f", str(_dockerfile(tmp, labelled)), "-t", tag, str(tmp)],
        check=True,
        capture_output=True,
        timeout=300,
    )


def _remove(tag: str) -> None:
    subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=60, check=False)


def test_docker_inspector_reads_local_labels(tmp_path: Path) -> None:
    good, plain = (
        f"bidi-tts-deploy-test:{uuid.uuid4().hex[:8]}",
        f"bidi-tts-deploy-test:{uuid.uuid4().hex[:8]}",
    )
    try:
        _build(tmp_path, good, labelled=True)
        (tmp_path / "Dockerfile").unlink()
        _build(tmp_path, plain, labelled=False)
        assert docker_inspector(parse_image(good), good).labels == {BIDI_LABEL: "true"}
        found = docker_inspector(parse_image(plain), plain)
        assert found.labels is not None and BIDI_LABEL not in found.labels
        missing = docker_inspector(parse_image("bidi-tts-deploy-test:absent"), "bidi-tts-deploy-test:absent")
        assert missing.labels is None and missing.problem == "the image is not present locally"
    finally:
        _remove(good)
        _remove(plain)


@pytest.mark.skipif(
    REGISTRY_BINARY is None, reason="no docker-registry binary (Debian package `docker-registry`)"
)
def test_up_build_pushes_to_a_loopback_registry(tmp_path: Path, moto: Moto, allow_g5: None) -> None:
    with local_registry(tmp_path / "registry") as registry:
        uri = f"{registry}/kokoro-tts:{uuid.uuid4().hex[:8]}"
        context = tmp_path / "ctx"
        context.mkdir()
        dockerfile = _dockerfile(context, labelled=True)
        lines: list[str] = []
        try:
            run_up(
                UpOptions(
                    name="built",
                    role_arn=ROLE_ARN,
                    image=uri,
                    build=True,
                    dockerfile=dockerfile,
                    context=context,
                    polling=Polling(10, 0.05),
                ),
                lines.append,
            )
            pushed = RegistryInspector()(parse_image(uri), uri)
            assert pushed.labels == {BIDI_LABEL: "true"}
            model = moto.client("sagemaker").describe_model(ModelName="built-model")
            assert model["PrimaryContainer"]["Image"] == uri
        finally:
            _remove(uri)

        plain = f"{registry}/kokoro-tts:plain-{uuid.uuid4().hex[:8]}"
        _dockerfile(context, labelled=False)
        moto.reset()
        try:
            with pytest.raises(DeployError) as err:
                run_up(
                    UpOptions(
                        name="plain",
                        role_arn=ROLE_ARN,
                        image=plain,
                        build=True,
                        dockerfile=dockerfile,
                        context=context,
                        polling=Polling(10, 0.05),
                    ),
                    lines.append,
                )
            assert err.value.code == ExitCode.LABEL
            assert RegistryInspector()(parse_image(plain), plain).labels is None  # refused before the push
            assert moto.inventory() == EMPTY
        finally:
            _remove(plain)
