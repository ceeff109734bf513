"""An SDK client for one SageMaker target: the endpoint, the HTTP/2 client, the credentials.

``aws-sdk-sagemaker-runtime-http2`` needs the awscrt HTTP client (the default aiohttp client cannot do
bidirectional streams), and two workarounds: the CRT client must keep a custom trust store across
the SDK's deep copies of its config, and credentials must be resolved before invoking, because the
SDK resolves them in a task of its own whose failure nobody awaits. Credentials come from the
standard AWS chain (environment, shared files, container/instance roles).
"""

from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from bidi_tts.transports._aio import settle
from bidi_tts.transports.sagemaker_errors import SageMakerConfigError, SageMakerCredentialsError

__all__ = ["SageMakerTarget", "discard", "http_client", "new_client", "require_credentials", "resolve_identity"]


@dataclass
class SageMakerTarget:
    """Which endpoint to invoke, and how to reach it."""

    endpoint_name: str
    region: str = "us-east-1"
    endpoint_url: str | None = None  # e.g. https://127.0.0.1:8443 for the local stand-in
    ca_file: str | None = None  # PEM CA bundle to trust instead of the system store
    target_variant: str | None = None
    invocation_path: str | None = None  # X-Amzn-SageMaker-Model-Invocation-Path (no leading slash)
    query_string: str | None = None  # X-Amzn-SageMaker-Model-Query-String


_crt_event_loop: Any = None


def _shared_crt_event_loop() -> Any:
    """One CRT I/O event-loop group (a native thread) shared by all transports in the process."""
    global _crt_event_loop
    if _crt_event_loop is None:
        from smithy_http.aio.crt import _AWSCRTEventLoop

        _crt_event_loop = _AWSCRTEventLoop()
    return _crt_event_loop


def http_client(ca_file: str | None) -> Any:
    """An AWSCRTHTTPClient that requires HTTP/2 and optionally trusts `ca_file`."""
    from awscrt import io as crt_io
    from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig

    class _CRTClient(AWSCRTHTTPClient):
        # The SDK deep-copies its config, transport included: keep the trust store across copies.
        def __init__(self, eventloop: Any = None, client_config: Any = None) -> None:
            super().__init__(eventloop=eventloop, client_config=client_config)
            if ca_file is not None:
                options = crt_io.TlsContextOptions()
                options.override_default_trust_store_from_path(ca_filepath=ca_file)
                self._tls_ctx = crt_io.ClientTlsContext(options)

        def __deepcopy__(self, memo: Any) -> _CRTClient:
            return _CRTClient(self._eventloop, deepcopy(self._config))

    return _CRTClient(_shared_crt_event_loop(), AWSCRTHTTPClientConfig(force_http_2=True))


async def new_client(target: SageMakerTarget) -> tuple[Any, Any]:
    """``(client, config)``: an SDK client for `target` and the configuration it resolved (region,
    endpoint, CRT HTTP/2 with the trust store, one attempt: a half-sent stream cannot be replayed).
    SageMakerConfigError when the SDK refuses it (a missing or invalid region)."""
    from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
    from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
    from smithy_aws_core.config.exceptions import ConfigError

    try:
        config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
            region=target.region, endpoint_uri=target.endpoint_url, transport=http_client(target.ca_file),
            max_attempts=1)
    except ConfigError as exc:
        raise SageMakerConfigError(f"endpoint {target.endpoint_name!r}: {exc}") from None
    return AsyncSageMakerRuntimeHTTP2Client(config=config), config


async def resolve_identity(target: SageMakerTarget) -> str | None:
    """Resolve the configuration and the AWS credentials exactly as :meth:`SageMakerTransport.open`
    does, sending nothing. Returns the endpoint URI the SDK was given (``endpoint_url`` or
    ``AWS_ENDPOINT_URL``...), None when it derives it from the region.

    Raises :class:`SageMakerConfigError` (a missing or invalid region) or
    :class:`SageMakerCredentialsError` (no credentials in the chain)."""
    client, config = await new_client(target)
    try:
        await require_credentials(client, target)
    finally:
        await discard(client, None)
    uri = getattr(config, "endpoint_uri", None)
    return str(uri) if uri else None


async def require_credentials(client: Any, target: SageMakerTarget) -> None:
    """Resolve the AWS credentials before invoking: the SDK resolves them in a task of its own
    whose failure nobody awaits, so a missing identity would otherwise look like a silent edge."""
    ensure_setup = getattr(client, "_ensure_setup", None)  # the SDK's lazy setup builds the chain
    if ensure_setup is None:
        return
    config = await ensure_setup()
    resolver = getattr(config, "aws_credentials_identity_resolver", None)
    if resolver is None:
        return
    try:
        await resolver.get_identity(properties={})
    except Exception as exc:
        detail = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        raise SageMakerCredentialsError(
            f"endpoint {target.endpoint_name!r}: no AWS credentials ({detail}); set AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE or a role") from None


async def discard(client: Any, stream: Any) -> None:
    """Release an SDK stream and client, ignoring errors (they are already broken or done)."""
    if stream is not None:
        await settle(stream.input_stream.close(), 2.0)
        output_stream = getattr(stream, "output_stream", None)
        if output_stream is not None:
            await settle(output_stream.close(), 2.0)
    if client is not None:
        await settle(client.close(), 5.0)
