"""Toys that answer POST /ping differently from GET /ping (health.ping.post.1)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from tests.toys.good import ToyContainer


class GetOnlyPingToy(ToyContainer):
    """Serves GET /ping only (Starlette answers POST with 405), as most HTTP servers' defaults do."""

    ping_methods = ("GET",)


class PostPing500Toy(ToyContainer):
    """Routes POST /ping to a handler that fails: 200 for GET, 500 for POST."""

    async def ping(self, request: Request) -> Response:
        return Response(status_code=500 if request.method == "POST" else 200)
