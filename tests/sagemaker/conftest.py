"""Fixtures: the toy container and the SageMaker runtime stand-in on free ports, dummy AWS credentials."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bidi_tts.gateway import GatewayThread
from bidi_tts.transports.sagemaker import SageMakerTarget
from tests.sagemaker.helpers import start_gateway, target_for, use_dummy_aws_credentials
from tests.toys.good import ServerThread, ToyContainer


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_dummy_aws_credentials(monkeypatch, tmp_path)


@pytest.fixture
def toy() -> ToyContainer:
    return ToyContainer()


@pytest.fixture
def container(toy: ToyContainer) -> Iterator[ServerThread]:
    with ServerThread(toy.app()) as server:
        yield server


@pytest.fixture
def gateway(container: ServerThread, tmp_path: Path) -> Iterator[GatewayThread]:
    with start_gateway(container.url, tmp_path / "certs") as gw:
        yield gw


@pytest.fixture
def target(gateway: GatewayThread) -> SageMakerTarget:
    return target_for(gateway)
