"""``--endpoint-name``: credentials, region, the runtime's host, TLS, and one stream that opens.

In the order a user fixes them: a missing ``--endpoint-ca`` file, a malformed ``--endpoint-url`` or
``--region`` and a missing SageMaker SDK are usage errors; no credentials, a runtime host that does
not resolve or answer, an untrusted certificate, an unknown endpoint and an endpoint whose container
does not answer are :class:`~.preflight_net.Unreachable`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bidi_tts.install_hint import install_command
from bidi_tts_conformance.preflight_net import Unreachable, connect, resolves, tls_handshake

ENDPOINT_OPEN_TIMEOUT_S = 6.0  # one InvokeEndpointWithBidirectionalStream, through the SDK
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")  # us-east-1, us-gov-west-1, ap-southeast-2, ...
REFERENCE_REGION = "us-east-1"  # resolved to tell "a wrong region" from "no DNS at all"


def check_endpoint(name: str, *, region: str, endpoint_url: str | None = None, ca_file: str | None = None,
                   open_timeout: float = ENDPOINT_OPEN_TIMEOUT_S) -> None:
    """Credentials, region and the runtime resolve and answer, and one stream to `name` opens."""
    if ca_file and not Path(ca_file).is_file():
        raise pytest.UsageError(f"--endpoint-ca {ca_file!r}: no such file")
    if endpoint_url:
        parts = urlsplit(endpoint_url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise pytest.UsageError(f"--endpoint-url {endpoint_url!r} is not an https URL; give it as "
                                    "https://HOST:PORT")
        connect(endpoint_url, "--endpoint-url")
        if parts.scheme == "https":
            tls_handshake(endpoint_url, "--endpoint-url", ca_file)
    elif not REGION.match(region):
        raise pytest.UsageError(f"--region {region!r} is not an AWS region name (like us-east-1 or eu-west-2)")
    if importlib.util.find_spec("aws_sdk_sagemaker_runtime_http2") is None:
        raise pytest.UsageError("--endpoint-name needs the SageMaker transport, which is not installed: "
                                f"{install_command('sagemaker')}")
    asyncio.run(_check_endpoint(name, region, endpoint_url, ca_file, open_timeout))


async def _check_endpoint(name: str, region: str, endpoint_url: str | None, ca_file: str | None,
                          open_timeout: float) -> None:
    from bidi_tts.transports.base import ConnectError
    from bidi_tts.transports.sagemaker import (
        SageMakerConfigError,
        SageMakerCredentialsError,
        SageMakerModelError,
        SageMakerTarget,
        SageMakerTransport,
        SageMakerValidationError,
        resolve_identity,
    )

    _quiet_sdk_leftovers(asyncio.get_running_loop())
    target = SageMakerTarget(name, region=region, endpoint_url=endpoint_url, ca_file=ca_file)
    try:
        configured = await resolve_identity(target)
    except SageMakerConfigError as exc:
        raise pytest.UsageError(f"--region {region!r}: {exc}") from None
    except SageMakerCredentialsError as exc:
        raise Unreachable(str(exc)) from None
    if configured is None:  # the SDK's own host for the region
        host = f"runtime.sagemaker.{region}.amazonaws.com"
        await resolve_region_host(host, region)
        configured = f"https://{host}"
    if not endpoint_url:
        connect(configured, "the SageMaker runtime")
    try:
        transport = await SageMakerTransport.open(target, open_timeout=open_timeout)
    except SageMakerValidationError as exc:
        where = "" if endpoint_url else f" in --region {region}"
        raise Unreachable(f"{str(exc).rstrip('.')}; is --endpoint-name right{where}?") from None
    except SageMakerModelError as exc:
        raise Unreachable(f"{str(exc).rstrip('.')}; the endpoint answers but its container does not") from None
    except ConnectError as exc:
        raise Unreachable(str(exc)) from None
    await transport.close()


def _quiet_sdk_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Drop the SDK's "Task exception was never retrieved" for the request body it still writes
    after the edge refused the stream (the refusal itself is what the line reports)."""

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException) and "HTTP_STREAM_HAS_COMPLETED" in f"{getattr(exc, 'name', '')} {exc}":
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


async def resolve_region_host(host: str, region: str) -> None:
    """The SDK's runtime host for `region` resolves; else Unreachable, telling a wrong region from no DNS."""
    if await resolves(host):
        return
    if region != REFERENCE_REGION and await resolves(f"runtime.sagemaker.{REFERENCE_REGION}.amazonaws.com"):
        raise Unreachable(f"--region {region!r}: {host} does not exist; is the region right?")
    raise Unreachable(f"cannot resolve the SageMaker runtime {host} (no DNS answer): no network here, "
                      f"or a wrong --region {region!r}")
