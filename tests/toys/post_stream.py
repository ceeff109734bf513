"""Toy containers whose ``POST /invocations`` misbehaves, for the stand-in's request routes:

- :class:`BrokenPostStreamToy` streams some audio, then its stream breaks (the response ends
  without the last chunk of its chunked body, as when the process dies mid-answer).
- :class:`EchoHeadersToy` answers with the request headers it got, as JSON, and sets custom
  attributes on the way back (what SageMaker forwards, and what it returns).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tests.toys.good import ToyContainer, tone


class BrokenPostStreamToy(ToyContainer):
    """A correct container whose POST stream breaks off after its first two chunks."""

    async def invocations(self, request: Request) -> Response:
        async def pcm() -> AsyncIterator[bytes]:
            yield tone(0.1, 24000)
            yield tone(0.1, 24000)
            raise RuntimeError("synthesizer crashed mid-stream (toy)")

        return StreamingResponse(pcm(), media_type="audio/pcm")


class EchoHeadersToy(ToyContainer):
    """POST /invocations answers the headers it received (and the body's length) as JSON."""

    async def invocations(self, request: Request) -> Response:
        body = await request.body()
        seen = {k.lower(): v for k, v in request.headers.items()}
        echoed = json.loads(body) if 0 < len(body) <= 4096 else None  # a big body is only counted
        return JSONResponse({"headers": seen, "body_bytes": len(body), "body": echoed},
                            headers={"X-Amzn-SageMaker-Custom-Attributes": "toy=answered"})
