"""`python -m reference_container --host H --port P`: serve the reference Kokoro-82M container.

Everything that can be checked without the model is checked before it loads, and each failure is
one line on stderr: a bad option or environment value and a `--default-voice` that is not among the
voices exit 2, a port that cannot be listened on exits 1. The listening socket is bound here, before
the model starts loading, and handed to uvicorn, so a busy port is found in a second and no other
process can take the port while the model loads.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from reference_container.g2p import set_offline_env
from reference_container.logs import kv, setup_logging
from reference_container.settings import PROG, Settings, parse_args

if TYPE_CHECKING:
    from reference_container import assets

log = logging.getLogger("reference_container")

EXIT_CANNOT_START = 1
EXIT_USAGE = 2


class ListenError(Exception):
    """The address cannot be listened on; the message is one line for people."""


def _fail(status: int, message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


def _where(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) the way uvicorn binds one; ListenError with one line if not."""
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {_where(host, port)}: unknown host {host!r} ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's create_server does
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ListenError(f"port {port} on {host} is in use (another server listens there)") from None
        if exc.errno == errno.EACCES:
            raise ListenError(f"no permission to listen on port {port} on {host}") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise ListenError(f"cannot listen on {_where(host, port)}: {host} is not an address of this "
                              "machine") from None
        raise ListenError(f"cannot listen on {_where(host, port)}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def may_use_hub(settings: Settings) -> bool:
    """Whether the backend that will load may take voices from the hub (the torch route), without
    importing torch: `auto` picks torch only with local torch weights (or the random-init model)."""
    from reference_container import assets

    if settings.backend == "auto":
        return settings.device != "cpu" and bool(
            assets.find_torch_weights(settings.weights_dir) or os.environ.get("KOKORO_TORCH_RANDOM_INIT") == "1"
        )
    return settings.backend == "torch"


def print_catalog(catalog: assets.VoiceCatalog, default_voice: str, out: TextIO) -> None:
    """`--list-voices`: a `#` summary line, then one `name  where-from` line per voice."""
    if not catalog.complete:
        print(f"# voices come from the Hugging Face hub ({catalog.source}) when the model loads; "
              "they cannot be listed before (set KOKORO_VOICES_DIR to use a local folder)", file=out)
        return
    note = " (Japanese packs: accented English)" if catalog.accented else ""
    missing = "" if default_voice in catalog.voices else " (NOT among them: start would fail)"
    print(f"# {len(catalog.voices)} voices from {catalog.source}{note}; default {default_voice}{missing}",
          file=out)
    width = max(map(len, catalog.voices), default=0)
    for name in sorted(catalog.voices):
        mark = "  (default)" if name == default_voice else ""
        print(f"{name:<{width}}  {catalog.voices[name]}{mark}", file=out)


def serve(settings: Settings, sock: socket.socket) -> int:
    """Run the server on a bound socket until it is stopped; non-zero when the model could not load."""
    import uvicorn

    from reference_container.app import create_app
    from reference_container.drain import Drain
    from reference_container.shutdown import GRACEFUL_SHUTDOWN_S, DrainingServer
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
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        lifespan="on",
    )

    def drain_of() -> Drain | None:
        state = getattr(app.state, "container", None)  # set by the lifespan
        return None if state is None else state.drain

    server = DrainingServer(config, drain_of, settings.drain_s)
    log.info(kv(event="starting", host=settings.host, port=settings.port, backend=settings.backend,
                url=f"http://{_where(settings.host, settings.port)}"))
    try:
        server.run(sockets=[sock])
    except OSError as exc:  # the event loop could not serve the socket: one line, not a traceback
        return _fail(EXIT_CANNOT_START, f"cannot serve on {_where(settings.host, settings.port)}: {exc}")
    return EXIT_CANNOT_START if failed else 0


def _main_timed(settings: Settings, list_voices: bool) -> int:
    """The timed backend: check its profile (one line, exit 2) and serve Kokoro's voice names, no files."""
    from reference_container.synthesizers.timed import KOKORO_ENGLISH_VOICES
    from reference_container.synthesizers.timed_profile import ProfileError, load_profile

    try:
        profile = load_profile(settings.timed_profile or "")
    except ProfileError as exc:
        return _fail(EXIT_USAGE, str(exc))
    if list_voices:
        print(f"# {len(KOKORO_ENGLISH_VOICES)} voices (timed backend, profile {profile.name}: names only, "
              f"no files); default {settings.default_voice}")
        for name in sorted(KOKORO_ENGLISH_VOICES):
            print(name)
        return 0
    if settings.default_voice not in KOKORO_ENGLISH_VOICES:
        return _fail(EXIT_USAGE, f"--default-voice {settings.default_voice!r} is not one of Kokoro's English "
                                 "voices (see --list-voices)")
    try:
        sock = bind_socket(settings.host, settings.port)
    except ListenError as exc:
        return _fail(EXIT_CANNOT_START, str(exc))
    return serve(settings, sock)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags/env, check what can be checked without the model, then serve."""
    settings, ns = parse_args(argv)  # a usage error exits here: nothing heavy is imported yet
    from reference_container import assets

    setup_logging(settings.log_level)
    set_offline_env()  # before anything imports huggingface_hub: no surprise network at start-up
    if settings.backend == "timed":
        return _main_timed(settings, ns.list_voices)
    try:
        catalog = assets.voice_catalog(
            settings.voices_dir, allow_hub=may_use_hub(settings), default_voice=settings.default_voice
        )
    except assets.AssetError as exc:
        return _fail(EXIT_USAGE, str(exc))
    if ns.list_voices:
        print_catalog(catalog, settings.default_voice, sys.stdout)
        return 0
    if catalog.complete and settings.default_voice not in catalog.voices:
        return _fail(EXIT_USAGE, f"--default-voice {settings.default_voice!r} is not among the "
                                 f"{len(catalog.voices)} voices in {catalog.source} (see --list-voices)")
    try:
        sock = bind_socket(settings.host, settings.port)
    except ListenError as exc:
        return _fail(EXIT_CANNOT_START, str(exc))
    return serve(settings, sock)


if __name__ == "__main__":
    sys.exit(main())
