"""Helpers shared by the SageMaker-path tests."""

from __future__ import annotations

from pathlib import Path

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
