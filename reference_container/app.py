"""The Starlette application: routes, and a lifespan that loads the model in the background.

The server listens at once (SM-ACCEPT, SM-PING answer 503 while loading) and turns `/ping` to 200
only after a warm-up synthesis.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from bidi_tts import protocol
from reference_container import omni_wire
from reference_container.http_routes import invocations, ping, voices
from reference_container.omni_session import OmniSession
from reference_container.settings import Settings
from reference_container.state import AppState
from reference_container.synthesizers.base import Synthesizer
from reference_container.transport_abort import TransportAbortMiddleware
from reference_container.ws_session import WsSession

log = logging.getLogger(__name__)


async def bidi_stream(ws: WebSocket) -> None:
    """WS /invocations-bidirectional-stream: the kokoro-sample dialect, or vLLM-Omni's where the SageMaker
    invocation-path header names its route."""
    if ws.headers.get(protocol.INVOCATION_PATH_HEADER) == omni_wire.INVOCATION_PATH:
        await OmniSession(ws, ws.app.state.container).run()
        return
    await WsSession(ws, ws.app.state.container).run()


async def omni_stream(ws: WebSocket) -> None:
    """WS /v1/audio/speech/stream: vLLM-Omni's streaming speech dialect."""
    await OmniSession(ws, ws.app.state.container).run()


def create_app(
    settings: Settings,
    synth: Synthesizer,
    *,
    on_load_failed: Callable[[], None] | None = None,
) -> Starlette:
    """Build the app around a synthesizer (loaded in the background at start-up)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state = AppState(settings, synth)
        app.state.container = state
        await state.scheduler.start()

        async def load() -> None:
            try:
                await state.load()
            except Exception:
                if on_load_failed is not None:
                    on_load_failed()

        loader = asyncio.create_task(load(), name="model-load")
        try:
            yield
        finally:
            loader.cancel()
            await state.scheduler.stop()

    return Starlette(
        routes=[
            Route("/ping", ping, methods=["GET", "POST"]),  # GET: the health check; POST: the bidi section
            Route("/voices", voices, methods=["GET"]),
            Route("/invocations", invocations, methods=["POST"]),
            WebSocketRoute(protocol.WS_PATH, bidi_stream),
            Route("/health", ping, methods=["GET"]),  # vLLM's health route, which relays in front of it ask
            WebSocketRoute(omni_wire.PATH, omni_stream),
        ],
        middleware=[Middleware(TransportAbortMiddleware)],
        lifespan=lifespan,
    )
