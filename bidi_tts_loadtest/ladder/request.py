"""Request load: one whole text per request, timed to its first audio byte and to its last.

Two routes to the same container route (POST-INVOCATIONS, ``reference_container/http_routes.py``):
- a container URL: ``POST {url}/invocations`` over one keep-alive ``http.client`` connection per
  client (reopened after a failure), the body read as it streams;
- a SageMaker endpoint: boto3 ``sagemaker-runtime`` ``invoke_endpoint_with_response_stream`` (the
  route the AWS sample's qmax ladder measured), each ``PayloadPart`` one piece of audio; retries are
  off, so a throttle or a busy answer is counted as a refusal rather than hidden behind a retry.

A refusal is the target saying "not now" (HTTP 503 or 429; a throttling or not-ready error code).
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from bidi_tts.protocol import DEFAULT_SAMPLE_RATE
from bidi_tts.transports.base import ConnectError
from bidi_tts.transports.sagemaker_client import SageMakerTarget
from bidi_tts.transports.sagemaker_errors import SageMakerOperationError, StreamFailure
from bidi_tts.transports.sagemaker_response_stream import invoke_with_response_stream, response_stream_client
from bidi_tts_loadtest.ladder.loops import JobFactory
from bidi_tts_loadtest.ladder.rung import Collected, Sample

BYTES_PER_S = 2 * DEFAULT_SAMPLE_RATE
REFUSED_STATUS = (429, 503)
REFUSED_CODES = ("ThrottlingException", "ServiceUnavailable", "ModelNotReadyException", "TooManyRequestsException")
READ_SIZE = 65536


def _body(text: str) -> bytes:
    return json.dumps({"text": text}).encode()


def _begin(item: str, sample: Sample, collected: Collected) -> None:
    """Count the request in (with its text's length) and start its clock, just before it is sent."""
    collected.samples.append(sample)
    sample.chars = len(item)
    sample.sent_at = time.perf_counter()


class UrlJob:
    """One client's keep-alive connection to ``{url}/invocations``."""

    def __init__(self, url: str, timeout_s: float) -> None:
        parts = urlsplit(url)
        secure = parts.scheme in ("https", "wss")
        self.path = parts.path.rstrip("/") + "/invocations"
        host, port = parts.hostname or "", parts.port
        self.conn: http.client.HTTPConnection = (
            http.client.HTTPSConnection(host, port, timeout=timeout_s, context=ssl.create_default_context())
            if secure else http.client.HTTPConnection(host, port, timeout=timeout_s))

    def __call__(self, item: str, sample: Sample, collected: Collected) -> None:
        _begin(item, sample, collected)
        nbytes = 0
        try:
            self.conn.request("POST", self.path, _body(item), {"Content-Type": "application/json"})
            response = self.conn.getresponse()
            if response.status != 200:
                response.read()
                sample.error = f"http {response.status}"
                sample.refused = response.status in REFUSED_STATUS
                return
            while chunk := response.read1(READ_SIZE):
                if sample.first_at is None:
                    sample.first_at = time.perf_counter()
                nbytes += len(chunk)
            # read1 never closes a Content-Length body after its last byte (a chunked one it does):
            # read() does, or the keep-alive connection refuses the next request (ResponseNotReady).
            response.read()
            if not nbytes:
                sample.error = "no audio"
        except (OSError, http.client.HTTPException):
            sample.error = "connection"
            self.conn.close()  # http.client reconnects on the next request
        finally:
            sample.done_at = time.perf_counter()
            sample.audio_s = nbytes / BYTES_PER_S

    def close(self) -> None:
        self.conn.close()


def url_jobs(url: str, timeout_s: float = 60.0) -> JobFactory:
    return lambda: UrlJob(url, timeout_s)


class EndpointJob:
    """One client's calls through a shared boto3 client (boto3 clients are thread-safe)."""

    def __init__(self, client: Any, endpoint_name: str) -> None:
        self.client = client
        self.endpoint_name = endpoint_name

    def __call__(self, item: str, sample: Sample, collected: Collected) -> None:
        _begin(item, sample, collected)
        nbytes = 0
        try:
            reply = invoke_with_response_stream(self.client, self.endpoint_name, _body(item), accept="audio/pcm")
            for arrived_at, data in reply.chunks():
                if sample.first_at is None:
                    sample.first_at = arrived_at
                nbytes += len(data)
            if not nbytes:
                sample.error = "no audio"
        except SageMakerOperationError as exc:
            sample.error = exc.error_code or f"http {exc.status}"
            sample.refused = exc.error_code in REFUSED_CODES or exc.status in REFUSED_STATUS
        except StreamFailure as exc:
            sample.error = f"stream {exc.error_code or 'error'}"  # ModelStreamError, InternalStreamFailure
        except ConnectError:
            sample.error = "connection"
        finally:
            sample.done_at = time.perf_counter()
            sample.audio_s = nbytes / BYTES_PER_S

    def close(self) -> None:
        pass


def endpoint_client(region: str, endpoint_url: str | None, endpoint_ca: str | None, pool: int,
                    timeout_s: float = 60.0) -> Any:
    """A boto3 ``sagemaker-runtime`` client with `pool` connections and no retries."""
    target = SageMakerTarget("", region=region, endpoint_url=endpoint_url, ca_file=endpoint_ca)
    return response_stream_client(target, read_timeout_s=timeout_s, pool=pool)


def endpoint_jobs(client: Any, endpoint_name: str) -> JobFactory:
    return lambda: EndpointJob(client, endpoint_name)
