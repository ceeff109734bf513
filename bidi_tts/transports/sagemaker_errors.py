"""SageMaker's errors as this project's transport errors, and the close code inside a ModelStreamError.

Operation errors (the edge refused the call: 400/424/500/503) become :class:`SageMakerOperationError`
subclasses, all :class:`~bidi_tts.transports.base.ConnectError`; the container's close
(``ModelStreamError``) becomes :class:`ModelStreamClosed`; a broken stream :class:`StreamFailure`.
"""

from __future__ import annotations

import re

from bidi_tts.transports.base import ConnectError, TransportClosed, TransportError

__all__ = [
    "ModelStreamClosed",
    "SageMakerConfigError",
    "SageMakerCredentialsError",
    "SageMakerInternalError",
    "SageMakerModelError",
    "SageMakerOperationError",
    "SageMakerServiceUnavailable",
    "SageMakerValidationError",
    "StreamFailure",
    "close_reason",
    "operation_error",
    "parse_close_code",
]


class SageMakerOperationError(ConnectError):
    """The edge refused the invocation with an HTTP error (no stream was opened)."""

    error_type = "SageMakerOperationError"

    def __init__(self, message: str, *, status: int | None, error_code: str | None = None) -> None:
        self.error_code = error_code
        super().__init__(message, status=status)


class SageMakerValidationError(SageMakerOperationError):
    """400 InputValidationError: bad input, unknown endpoint, or missing permission."""

    error_type = "InputValidationError"


class SageMakerModelError(SageMakerOperationError):
    """424 ModelError: the container could not be reached or refused the stream."""

    error_type = "ModelError"

    def __init__(self, message: str, *, status: int | None, error_code: str | None = None,
                 original_status_code: int | None = None, original_message: str | None = None) -> None:
        self.original_status_code = original_status_code
        self.original_message = original_message  # the container's own body, when SageMaker passes it
        super().__init__(message, status=status, error_code=error_code)


class SageMakerServiceUnavailable(SageMakerOperationError):
    """503 ServiceUnavailableError: a temporary failure of the service; retry later."""

    error_type = "ServiceUnavailableError"


class SageMakerInternalError(SageMakerOperationError):
    """500 InternalServerError (or any other unexpected operation error)."""

    error_type = "InternalServerError"


class SageMakerCredentialsError(ConnectError):
    """No AWS credentials could be resolved (environment, shared files, roles): nothing was sent."""


class SageMakerConfigError(ConnectError):
    """The SDK rejected its configuration before sending anything (a missing or invalid region)."""


class ModelStreamClosed(TransportClosed):
    """The container closed the stream: SageMaker's ``ModelStreamError`` (SM-CLOSE)."""

    def __init__(self, code: int | None, reason: str = "", *, error_code: str | None = None) -> None:
        self.error_code = error_code
        super().__init__(code, reason, by_peer=True)


class StreamFailure(TransportError):
    """The stream broke on the service side: ``InternalStreamFailure``, an unmodeled error event,
    or a transport failure after the stream was opened."""

    def __init__(self, message: str, *, error_code: str | None = None) -> None:
        self.error_code = error_code
        super().__init__(message)


_CLOSE_CODE = re.compile(r"\b([1-4]\d{3})\b")


def parse_close_code(error_code: str | None, message: str | None) -> int | None:
    """The WebSocket close code carried by a ModelStreamError: ``ErrorCode`` when it is numeric,
    else the first close-code-like number (1000-4999) in ``Message``."""
    if error_code and error_code.strip().isdigit():
        return int(error_code.strip())
    if message and (found := _CLOSE_CODE.search(message)):
        return int(found.group(1))
    return None


def close_reason(message: str | None) -> str:
    """The close reason inside a ModelStreamError's message."""
    if not message:
        return ""
    # The stand-in writes "...close code N: reason"; elsewhere the whole message is the reason.
    head, sep, tail = message.partition(": ")
    return tail if sep and _CLOSE_CODE.search(head) else message


def operation_error(exc: Exception, endpoint_name: str) -> ConnectError:
    """What an error from invoking the endpoint `endpoint_name` means: a typed operation error, or a ConnectError
    naming the connection failure (the CRT's own name and its meaning in words)."""
    from aws_sdk_sagemaker_runtime_http2.models import (
        InputValidationError,
        InternalServerError,
        ModelError,
        ServiceUnavailableError,
    )

    where = f"endpoint {endpoint_name!r}"
    detail = getattr(exc, "message", None) or ""
    code = getattr(exc, "error_code", None)
    match exc:
        case ModelError():
            original = exc.original_status_code
            return SageMakerModelError(
                f"{where}: 424 ModelError: {detail}" + (f" (model status {original})" if original else ""),
                status=424, error_code=code, original_status_code=original)
        case InputValidationError():
            return SageMakerValidationError(f"{where}: 400 InputValidationError: {detail}",
                                            status=400, error_code=code)
        case ServiceUnavailableError():
            return SageMakerServiceUnavailable(f"{where}: 503 ServiceUnavailableError: {detail}",
                                               status=503, error_code=code)
        case InternalServerError():
            return SageMakerInternalError(f"{where}: 500 InternalServerError: {detail}",
                                          status=500, error_code=code)
    status = getattr(getattr(exc, "response_metadata", None), "http_status_code", None)
    if status is not None:
        return SageMakerInternalError(f"{where}: unexpected HTTP {status} from the edge", status=status)
    name = crt_name(exc) or type(exc).__name__
    words = _CRT_WORDS.get(name)
    return ConnectError(f"{where}: cannot open the stream ({f'{words}: ' if words else ''}{name})")


# What the CRT's most common connection failures mean, for people.
_CRT_WORDS = {
    "AWS_IO_SOCKET_CONNECTION_REFUSED": "connection refused",
    "AWS_IO_SOCKET_TIMEOUT": "the connection timed out",
    "AWS_IO_SOCKET_NO_ROUTE_TO_HOST": "no route to the host",
    "AWS_IO_SOCKET_NETWORK_DOWN": "the network is down",
    "AWS_IO_DNS_INVALID_NAME": "the host name does not resolve",
    "AWS_IO_DNS_QUERY_FAILED": "the host name does not resolve",
    "AWS_IO_TLS_ERROR_NEGOTIATION_FAILURE": "the TLS handshake failed (an untrusted certificate?)",
}


def crt_name(exc: BaseException) -> str | None:
    """The AwsCrtError name (AWS_IO_...) behind `exc`, which the SDK wraps in its own errors."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        name = getattr(current, "name", None)
        if isinstance(name, str) and name.startswith("AWS_"):
            return name
        todo.extend(e for e in (current.__cause__, current.__context__, *current.args)
                    if isinstance(e, BaseException))
    return None
