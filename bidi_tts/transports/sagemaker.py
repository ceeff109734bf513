"""SageMaker InvokeEndpointWithBidirectionalStream as a :class:`~bidi_tts.transports.base.Transport`.

This module moves frames; :mod:`bidi_tts.transports.sagemaker_client` makes the SDK client (HTTP/2
over awscrt, credentials, the workarounds) and :mod:`bidi_tts.transports.sagemaker_errors` says what
SageMaker's errors mean. ``SageMakerTarget.endpoint_url`` points the SDK at another edge, such as the
local stand-in :mod:`bidi_tts.gateway`, whose CA is trusted via ``ca_file``.

Mapping (CONTRACT.md SM-FRAMES-IN/OUT, SM-CLOSE):

- ``send(payload, kind)`` sends one ``PayloadPart``: TEXT -> ``DataType=UTF8``, BINARY ->
  ``DataType=BINARY``, None -> the ``data_type`` given to :meth:`SageMakerTransport.open`
  (default: unset, which the container receives as a BINARY frame, like the sample's clients).
- ``send_fragmented`` sends ``PARTIAL`` parts then a ``COMPLETE`` one.
- Response ``PayloadPart.DataType``: UTF8 -> TEXT, BINARY -> BINARY, absent -> None.
- Response ``PayloadPart.CompletionState``: SageMaker forwards each container WebSocket frame as
  its own part, ``PARTIAL`` until the frame with FIN, then ``COMPLETE`` (absent counts as
  COMPLETE); the transport joins such a run into one frame (one container message), whose kind
  is that of its first part and whose time is that of its last.
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
import time
from collections.abc import Sequence
from typing import Any

from bidi_tts.frames import Frame, FrameKind
from bidi_tts.transports import sagemaker_errors
from bidi_tts.transports._aio import cancel_and_wait, settle
from bidi_tts.transports.base import AsyncWaitClosed, ConnectError, TransportClosed, TransportError, TransportTimeout
from bidi_tts.transports.sagemaker_client import SageMakerTarget, new_client, require_credentials, resolve_identity
from bidi_tts.transports.sagemaker_client import discard as _discard
from bidi_tts.transports.sagemaker_errors import *  # noqa: F403 (the errors are part of this module's names)
from bidi_tts.transports.sagemaker_errors import (
    ModelStreamClosed,
    StreamFailure,
    close_reason,
    operation_error,
    parse_close_code,
)

# the transport, and the names its users import from here: its target and every error of sagemaker_errors
__all__ = ["SageMakerTarget", "SageMakerTransport", "resolve_identity"]
__all__ += sagemaker_errors.__all__

logger = logging.getLogger(__name__)

UTF8 = "UTF8"
BINARY = "BINARY"
PARTIAL = "PARTIAL"
COMPLETE = "COMPLETE"
_CLOSE_GRACE_S = 5.0  # how long close() waits for the edge to end the response stream


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
        from aws_sdk_sagemaker_runtime_http2.models import InvokeEndpointWithBidirectionalStreamInput

        client: Any = None
        stream: Any = None
        try:
            async with asyncio.timeout(open_timeout):
                client, _config = await new_client(target)
                await require_credentials(client, target)
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
            if isinstance(exc, Exception) and not isinstance(exc, ConnectError):
                raise operation_error(exc, target.endpoint_name) from exc
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
        message = _Reassembler()
        try:
            while True:
                event = await self._output_stream.receive()
                if event is None:
                    put(_END)
                    return
                if isinstance(event, ResponseStreamEventPayloadPart):
                    part = event.value
                    if (frame := message.add(part.bytes_ or b"", part.data_type, part.completion_state)) is not None:
                        put(frame)
                else:
                    logger.debug("ignoring unknown response event %r", event)
        except ModelStreamError as exc:
            put(ModelStreamClosed(parse_close_code(exc.error_code, exc.message),
                                  close_reason(exc.message), error_code=exc.error_code))
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


class _Reassembler:
    """Joins a run of ``PARTIAL`` response parts and the ``COMPLETE`` one after it into one frame."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._kind: FrameKind | None = None

    def add(self, data: bytes, data_type: str | None, completion_state: str | None) -> Frame | None:
        if not self._parts:
            self._kind = _frame_kind(data_type)
        self._parts.append(data)
        if completion_state == PARTIAL:
            return None
        whole = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
        self._parts = []
        return Frame(whole, self._kind, time.perf_counter())


def _frame_kind(data_type: str | None) -> FrameKind | None:
    if data_type == UTF8:
        return FrameKind.TEXT
    if data_type == BINARY:
        return FrameKind.BINARY
    return None
