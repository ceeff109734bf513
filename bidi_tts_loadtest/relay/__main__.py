"""``python -m loadtest.relay``: serve the listen page and relay its turns to a container or endpoint."""

from __future__ import annotations

import argparse
import sys

from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.relay.app import Relay
from bidi_tts_loadtest.relay.server import RelayServer, add_upstream_options, listen, probe, upstream_from
from bidi_tts_loadtest.relay.upstream import Unreachable, UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = exit_codes.Parser(
        prog="python -m loadtest.relay",
        description="Serve the listen page and relay its text to a TTS container (WebSocket) or a SageMaker "
        "endpoint, handing the audio back as raw PCM in binary WebSocket frames (/ws) or base64 PCM in "
        "server-sent events (POST /sse). Open the printed URL in a browser.",
    )
    add_upstream_options(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8090, help="port to listen on; 0 picks a free one (default 8090)")
    parser.add_argument("--message-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="longest silence from upstream while a turn is in flight (default 30)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        upstream = upstream_from(args)
        sock = listen(args.host, args.port)
        probe(upstream)
    except UsageError as exc:
        print(f"relay: {exc}", file=sys.stderr)
        return exit_codes.UNREACHABLE if isinstance(exc, Unreachable) else exit_codes.USAGE
    with RelayServer(Relay(upstream, message_timeout_s=args.message_timeout), sock) as server:
        print(f"relay: listening on {server.url}/ (upstream {upstream.describe()}); Ctrl-C stops", flush=True)
        try:
            server.thread.join()
        except KeyboardInterrupt:
            pass
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
