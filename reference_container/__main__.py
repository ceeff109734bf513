"""`python -m reference_container --host H --port P`: serve the reference Kokoro-82M container."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import uvicorn

from reference_container.g2p import set_offline_env
from reference_container.logs import kv, setup_logging
from reference_container.settings import Settings, parse_settings

log = logging.getLogger("reference_container")


def serve(settings: Settings) -> int:
    """Run the server until it is stopped; non-zero when the model could not load."""
    set_offline_env()  # before anything imports huggingface_hub: no surprise network at start-up
    from reference_container.app import create_app
    from reference_container.synthesizers.factory import DeferredSynthesizer

    synth = DeferredSynthesizer(settings)
    server: uvicorn.Server | None = None
    failed = False

    def on_load_failed() -> None:
        nonlocal failed
        failed = True
        if server is not None:
            server.should_exit = True

    app = create_app(settings, synth, on_load_failed=on_load_failed)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        ws="websockets-sansio",
        ws_max_size=settings.max_message_bytes,
        ws_ping_interval=settings.ws_ping_interval,
        ws_ping_timeout=settings.ws_ping_interval,
        log_config=None,
        log_level=settings.log_level,
        timeout_graceful_shutdown=10,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    log.info(kv(event="starting", host=settings.host, port=settings.port, backend=settings.backend))
    server.run()
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags/env, set up logging, serve."""
    settings = parse_settings(argv)
    setup_logging(settings.log_level)
    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
