"""SageMaker InvokeEndpointWithBidirectionalStream as a :class:`~bidi_tts.transports.base.Transport`.

Built on ``aws-sdk-sagemaker-runtime-http2`` with the awscrt HTTP client (the default aiohttp client
cannot do bidirectional streams). Credentials come from the standard AWS chain (environment,
shared files, container/instance roles); ``SageMakerTarget.endpoint_url`` points the SDK at another
edge, such as the local stand-in :mod:`bidi_tts.gateway`, whose CA is trusted via ``ca_file``.

Mapping (CONTRACT.md SM-FRAMES-IN/OUT, SM-CLOSE):

- ``send(payload, kind)`` sends one ``PayloadPart``: TEXT -> ``DataType=UTF8``, BINARY ->
  ``DataType=BINARY``, None -> the ``data_type`` given to :meth:`SageMakerTransport.open`
  (default: unset, which the container receives as a BINARY frame, like the sample's clients).
- ``send_fragmented`` sends ``PARTIAL`` parts then a ``COMPLETE`` one.
- Response ``PayloadPart.DataType``: UTF8 -> TEXT, BINARY -> BINARY, absent -> None.
- ``ModelStreamError`` (the container closed) -> :class:`ModelStreamClosed`, a
  :class:`~bidi_tts.transports.base.TransportClosed` with the close code parsed from the error;
  ``InternalStreamFailure`` and broken streams -> :class:`StreamFailure`; operation errors
  (400/424/500/503) -> subclasses of :class:`SageMakerOperationError`, a
  :class:`~bidi_tts.transports.base.ConnectError`.

Event-stream errors arrive as exceptions raised by the SDK's ``receive()``, so one background task
reads the output stream and queues frames and errors; :meth:`SageMakerTransport.receive` waits on
that queue, so a timeout never cancels the SDK's own read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from bidi_tts.frames import FrameKind
from bidi_tts.transports._aio import cancel_and_wait, settle
from bidi_tts.transports.base import (
    AsyncWaitClosed,
    ConnectError,
    Frame,
    TransportClosed,
    TransportError,
    TransportTimeout,
)

logger = logging.getLogger(__name__)

UTF8 = "UTF8"
BINARY = "BINARY"
PARTIAL = "PARTIAL"
COMPLETE = "COMPLETE"
_CLOSE_GRACE_S = 5.0  # how long close() waits for the edge to end the response stream


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


# -- typed errors ---------------------------------------------------------------------------------
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
                 original_status_code: int | None = None) -> None:
        self.original_status_code = original_status_code
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


def _close_reason(message: str | None) -> str:
    if not message:
        return ""
    # The stand-in writes "...close code N: reason"; elsewhere the whole message is the reason.
    head, sep, tail = message.partition(": ")
    return tail if sep and _CLOSE_CODE.search(head) else message


# -- the SDK plumbing -----------------------------------------------------------------------------
_crt_event_loop: Any = None


def _shared_crt_event_loop() -> Any:
    """One CRT I/O event-loop group (a native thread) shared by all transports in the process."""
    global _crt_event_loop
    if _crt_event_loop is None:
        from smithy_http.aio.crt import _AWSCRTEventLoop

        _crt_event_loop = _AWSCRTEventLoop()
    return _crt_event_loop


def _http_client(ca_file: str | None) -> Any:
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


def _operation_error(exc: Exception, target: SageMakerTarget) -> ConnectError:
    from aws_sdk_sagemaker_runtime_http2.models import (
        InputValidationError,
        InternalServerError,
        ModelError,
        ServiceUnavailableError,
    )

    where = f"endpoint {target.endpoint_name!r}"
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
    name = _crt_name(exc) or type(exc).__name__
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


def _crt_name(exc: BaseException) -> str | None:
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


class _EndOfStream:
    pass


_END = _EndOfStream()


class SageMakerTransport(AsyncWaitClosed):
    """One InvokeEndpointWithBidirectionalStream call (one container WebSocket session)."""

    knows_frame_kind = True

    def __init__(self, client: Any, stream: Any, output_stream: Any, output: Any,
                 data_type: FrameKind | None) -> None:
        self._client = client
        self._stream = stream
        self._output_stream = output_stream
        #: The production variant that served the call (``X-Amzn-Invoked-Production-Variant``).
        self.invoked_variant: str | None = getattr(output, "invoked_production_variant", None)
        self._data_type = data_type
        self._queue: asyncio.Queue[Frame | TransportError | _EndOfStream] = asyncio.Queue()
        self._terminal: TransportError | None = None
        self._input_closed = False
        self._closed = False
        self._reader = asyncio.create_task(self._read(), name="sagemaker-reader")

    @classmethod
    async def open(
        cls, target: SageMakerTarget, data_type: FrameKind | None = None, open_timeout: float = 30.0
    ) -> SageMakerTransport:
        """Invoke the endpoint and wait for the edge to accept the stream.

        Raises a :class:`SageMakerOperationError` subclass when the edge answers with an error
        (400/424/500/503) and :class:`~bidi_tts.transports.base.ConnectError` when it cannot be
        reached, credentials are missing or nothing answers within `open_timeout` seconds.
        """
        from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
        from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
        from aws_sdk_sagemaker_runtime_http2.models import InvokeEndpointWithBidirectionalStreamInput
        from smithy_aws_core.config.exceptions import ConfigError

        client: Any = None
        stream: Any = None
        try:
            async with asyncio.timeout(open_timeout):
                config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
                    region=target.region,
                    endpoint_uri=target.endpoint_url,
                    transport=_http_client(target.ca_file),
                    max_attempts=1,  # a half-sent stream cannot be replayed
                )
                client = AsyncSageMakerRuntimeHTTP2Client(config=config)
                await _require_credentials(client, target)
                stream = await client.invoke_endpoint_with_bidirectional_stream(
                    InvokeEndpointWithBidirectionalStreamInput(
                        endpoint_name=target.endpoint_name,
                        target_variant=target.target_variant,
                        model_invocation_path=target.invocation_path,
                        model_query_string=target.query_string,
                    )
                )
                output, output_stream = await stream.await_output()
        except BaseException as exc:
            await _discard(client, stream)
            if isinstance(exc, TimeoutError):
                raise ConnectError(
                    f"endpoint {target.endpoint_name!r}: no answer within {open_timeout} s") from exc
            if isinstance(exc, ConfigError):
                raise SageMakerConfigError(f"endpoint {target.endpoint_name!r}: {exc}") from None
            if isinstance(exc, Exception) and not isinstance(exc, ConnectError):
                raise _operation_error(exc, target) from exc
            raise
        return cls(client, stream, output_stream, output, data_type)

    # -- Transport -------------------------------------------------------------------------------
    @property
    def close_code(self) -> int | None:
        return self._terminal.code if isinstance(self._terminal, TransportClosed) else None

    async def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> None:
        data = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
        await self._send_part(data, kind if kind is not None else self._data_type, None)

    async def send_fragmented(self, fragments: Sequence[bytes], *, kind: FrameKind) -> None:
        last = len(fragments) - 1
        for index, fragment in enumerate(fragments):
            await self._send_part(bytes(fragment), kind, COMPLETE if index == last else PARTIAL)

    async def receive(self, timeout: float | None = None) -> Frame:
        if self._terminal is not None:
            raise self._terminal
        try:
            item = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            raise TransportTimeout(f"no frame within {timeout} s") from None
        if isinstance(item, Frame):
            return item
        if isinstance(item, _EndOfStream):
            # Without a ModelStreamError, an end we did not ask for is abnormal (reset or dropped
            # stream): report it with WebSocket's code for an abnormal closure.
            item = (TransportClosed(1000, "", by_peer=False) if self._input_closed
                    else TransportClosed(1006, "the response stream ended without a close", by_peer=True))
        self._terminal = item
        raise item

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Close the input stream (SageMaker carries no close code from the client), let the
        edge finish the response stream, then release the connection. Idempotent.

        Frames still unread are dropped, so call it after the last expected response."""
        if self._closed:
            return
        self._closed = True
        await self._close_input()
        # Wait until the edge ends the response stream: only then has the HTTP client finished
        # writing the end of the request, and the connection can be released cleanly.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_CLOSE_GRACE_S):
                await asyncio.shield(self._reader)
                while await self._output_stream.receive() is not None:
                    pass
        if not self._reader.done():
            # Still streaming (a stalled edge): dropping the connection ends the SDK's read,
            # which is cleaner than cancelling it under the CRT's feet.
            await _discard(self._client, self._stream)
            await settle(asyncio.shield(self._reader), 2.0)
        await cancel_and_wait(self._reader)
        await _discard(self._client, self._stream)
        if self._terminal is None:
            self._terminal = TransportClosed(code, reason, by_peer=False)

    # -- internals -------------------------------------------------------------------------------
    async def _send_part(self, data: bytes, kind: FrameKind | None, completion: str | None) -> None:
        from aws_sdk_sagemaker_runtime_http2.models import RequestPayloadPart, RequestStreamEventPayloadPart

        if self._input_closed:
            raise self._terminal or TransportClosed(None, "input stream already closed", by_peer=False)
        data_type = None if kind is None else (UTF8 if kind is FrameKind.TEXT else BINARY)
        part = RequestPayloadPart(bytes_=data, data_type=data_type, completion_state=completion)
        try:
            await self._stream.input_stream.send(RequestStreamEventPayloadPart(value=part))
        except OSError as exc:
            self._input_closed = True
            if self._terminal is not None:
                raise self._terminal from None
            raise TransportClosed(None, "the request stream is closed", by_peer=True) from exc

    async def _close_input(self) -> None:
        if self._input_closed:
            return
        self._input_closed = True
        with contextlib.suppress(Exception):
            await self._stream.input_stream.close()

    async def _read(self) -> None:
        from aws_sdk_sagemaker_runtime_http2.models import (
            InternalStreamFailure,
            ModelStreamError,
            ResponseStreamEventPayloadPart,
        )
        from smithy_aws_event_stream.exceptions import UnmodeledEventError

        put = self._queue.put_nowait
        try:
            while True:
                event = await self._output_stream.receive()
                if event is None:
                    put(_END)
                    return
                if isinstance(event, ResponseStreamEventPayloadPart):
                    part = event.value
                    put(Frame(part.bytes_ or b"", _frame_kind(part.data_type), time.perf_counter()))
                else:
                    logger.debug("ignoring unknown response event %r", event)
        except ModelStreamError as exc:
            put(ModelStreamClosed(parse_close_code(exc.error_code, exc.message),
                                  _close_reason(exc.message), error_code=exc.error_code))
        except InternalStreamFailure as exc:
            put(StreamFailure(f"InternalStreamFailure: {exc.message or 'no message'}",
                              error_code="InternalStreamFailure"))
        except UnmodeledEventError as exc:
            put(StreamFailure(f"stream error {exc.code}: {exc.message}", error_code=exc.code))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # A reset or dropped HTTP/2 stream surfaces as a CRT or I/O error from the SDK.
            name = getattr(exc, "name", None) or type(exc).__name__
            put(StreamFailure(f"the response stream broke ({name})"))


def _frame_kind(data_type: str | None) -> FrameKind | None:
    if data_type == UTF8:
        return FrameKind.TEXT
    if data_type == BINARY:
        return FrameKind.BINARY
    return None


async def resolve_identity(target: SageMakerTarget) -> str | None:
    """Resolve the configuration and the AWS credentials exactly as :meth:`SageMakerTransport.open`
    does, sending nothing. Returns the endpoint URI the SDK was given (``endpoint_url`` or
    ``AWS_ENDPOINT_URL``...), None when it derives it from the region.

    Raises :class:`SageMakerConfigError` (a missing or invalid region) or
    :class:`SageMakerCredentialsError` (no credentials in the chain)."""
    from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
    from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
    from smithy_aws_core.config.exceptions import ConfigError

    try:
        config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
            region=target.region, endpoint_uri=target.endpoint_url, transport=_http_client(target.ca_file),
            max_attempts=1)
    except ConfigError as exc:
        raise SageMakerConfigError(f"endpoint {target.endpoint_name!r}: {exc}") from None
    client = AsyncSageMakerRuntimeHTTP2Client(config=config)
    try:
        await _require_credentials(client, target)
    finally:
        await _discard(client, None)
    uri = getattr(config, "endpoint_uri", None)
    return str(uri) if uri else None


async def _require_credentials(client: Any, target: SageMakerTarget) -> None:
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


async def _discard(client: Any, stream: Any) -> None:
    """Release an SDK stream and client, ignoring errors (they are already broken or done)."""
    if stream is not None:
        await settle(stream.input_stream.close(), 2.0)
        output_stream = getattr(stream, "output_stream", None)
        if output_stream is not None:
            await settle(output_stream.close(), 2.0)
    if client is not None:
        await settle(client.close(), 5.0)
