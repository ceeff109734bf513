"""``POST /invocations`` through SageMaker: boto3's ``InvokeEndpointWithResponseStream``.

The request route of an endpoint (HTTP/1.1, botocore's event-stream parser), beside the
bidirectional stream of :mod:`bidi_tts.transports.sagemaker`. Blocking, like boto3::

    client = response_stream_client(SageMakerTarget("my-endpoint", endpoint_url=..., ca_file=...))
    reply = invoke_with_response_stream(client, "my-endpoint", b'{"text": "Hello."}')
    for at, data in reply.chunks():   # (time.perf_counter() on arrival, bytes), as they stream
        ...
    reply.first_byte_s                # from the call to the first body bytes (None before them)

Errors: an operation error raises the :class:`~bidi_tts.transports.sagemaker_errors.SageMakerOperationError`
subclass of its status (a container's error status is a 424 ``SageMakerModelError`` with
``original_status_code`` and ``original_message``); a stream that breaks midway (``ModelStreamError``,
``InternalStreamFailure``) raises :class:`~bidi_tts.transports.sagemaker_errors.StreamFailure`
whose ``error_code`` is the exception's type.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bidi_tts.install_hint import install_hint
from bidi_tts.transports.base import ConnectError
from bidi_tts.transports.sagemaker_client import SageMakerTarget
from bidi_tts.transports.sagemaker_errors import (
    SageMakerConfigError,
    SageMakerInternalError,
    SageMakerModelError,
    SageMakerOperationError,
    SageMakerServiceUnavailable,
    SageMakerValidationError,
    StreamFailure,
)

__all__ = ["StreamedReply", "invoke_with_response_stream", "response_stream_client"]


def response_stream_client(target: SageMakerTarget, *, read_timeout_s: float = 70.0, pool: int = 10) -> Any:
    """A boto3 ``sagemaker-runtime`` client for `target` (region, endpoint URL, CA file), with one
    attempt per call: a retried invocation would synthesize twice and hide the first failure; `pool`
    connections (boto3 clients are thread-safe: one client for many threads needs one each).
    :class:`SageMakerConfigError` (one line, with the install command) when boto3 is missing."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise SageMakerConfigError("the response-stream route needs boto3, which is not installed; "
                                   + install_hint("deploy")) from None
    config = Config(retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=read_timeout_s,
                    connect_timeout=min(10.0, read_timeout_s), max_pool_connections=max(10, pool))
    return boto3.client("sagemaker-runtime", region_name=target.region, endpoint_url=target.endpoint_url,
                        verify=target.ca_file if target.ca_file else True, config=config)


@dataclass
class StreamedReply:
    """One InvokeEndpointWithResponseStream answer: its headers, then its body as it streams."""

    content_type: str | None
    invoked_variant: str | None
    started: float  # time.perf_counter() when the call was made
    _events: Any = field(repr=False)
    first_byte_at: float | None = None

    @property
    def first_byte_s(self) -> float | None:
        return None if self.first_byte_at is None else self.first_byte_at - self.started

    def chunks(self) -> Iterator[tuple[float, bytes]]:
        """``(arrival time, bytes)`` per non-empty ``PayloadPart``, until the stream ends."""
        from botocore.exceptions import BotoCoreError, EventStreamError

        try:
            for event in self._events:
                data = (event.get("PayloadPart") or {}).get("Bytes") or b""
                if not data:
                    continue
                now = time.perf_counter()
                if self.first_byte_at is None:
                    self.first_byte_at = now
                yield now, data
        except EventStreamError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code") or "EventStreamError")
            # botocore keeps an exception event's type and Message, not its ErrorCode.
            raise StreamFailure(f"{code}: {error.get('Message') or 'no message'}", error_code=code) from None
        except BotoCoreError as exc:
            raise StreamFailure(f"the response stream broke ({type(exc).__name__}: {exc})") from None

    def close(self) -> None:
        close = getattr(self._events, "close", None)
        if close is not None:
            close()


def invoke_with_response_stream(client: Any, endpoint_name: str, body: bytes, *,
                                content_type: str = "application/json", accept: str | None = None,
                                target_variant: str | None = None,
                                custom_attributes: str | None = None) -> StreamedReply:
    """Invoke; return once the answer's headers are in (the body streams from :meth:`StreamedReply.chunks`)."""
    from botocore.exceptions import BotoCoreError, ClientError

    params: dict[str, Any] = {"EndpointName": endpoint_name, "Body": body, "ContentType": content_type}
    if accept is not None:
        params["Accept"] = accept
    if target_variant is not None:
        params["TargetVariant"] = target_variant
    if custom_attributes is not None:
        params["CustomAttributes"] = custom_attributes
    started = time.perf_counter()
    try:
        response = client.invoke_endpoint_with_response_stream(**params)
    except ClientError as exc:
        raise _operation_error(exc, endpoint_name) from None
    except BotoCoreError as exc:
        raise ConnectError(f"endpoint {endpoint_name!r}: {exc}") from None
    return StreamedReply(response.get("ContentType"), response.get("InvokedProductionVariant"), started,
                         response["Body"])


def _operation_error(exc: Any, endpoint_name: str) -> SageMakerOperationError:
    response = exc.response
    error = response.get("Error", {})
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    code = str(error.get("Code") or status)
    text = f"endpoint {endpoint_name!r}: {status} {code}: {error.get('Message') or 'no message'}"
    if code == "ModelError" or status == 424:
        original = response.get("OriginalStatusCode")
        return SageMakerModelError(text, status=status, error_code=code,
                                   original_status_code=int(original) if original is not None else None,
                                   original_message=response.get("OriginalMessage"))
    if status == 400 or code == "ValidationError":
        return SageMakerValidationError(text, status=status, error_code=code)
    if status == 503:
        return SageMakerServiceUnavailable(text, status=status, error_code=code)
    if status is not None and 400 <= status < 500:
        return SageMakerOperationError(text, status=status, error_code=code)
    return SageMakerInternalError(text, status=status, error_code=code)
