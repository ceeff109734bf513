"""Helpers shared by the SageMaker-path tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from bidi_tts.gateway import Faults, GatewayConfig, GatewayThread
from bidi_tts.transports.sagemaker import SageMakerTarget


def start_gateway(
    upstream: str, cert_dir: Path, faults: Faults | None = None, **options: object
) -> GatewayThread:
    """A stand-in on a free port in front of `upstream` (use as a context manager)."""
    config = GatewayConfig(upstream=upstream, cert_dir=cert_dir, port=0, faults=faults or Faults(),
                           **options)  # type: ignore[arg-type]
    return GatewayThread(config)


def target_for(gw: GatewayThread, **fields: object) -> SageMakerTarget:
    """A target that reaches the stand-in `gw` and trusts its CA."""
    return SageMakerTarget("toy-endpoint", endpoint_url=gw.url, ca_file=gw.ca_file, **fields)  # type: ignore[arg-type]


def use_dummy_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy credentials through the standard chain; no real AWS config or metadata service."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLETESTONLY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret-not-real")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
