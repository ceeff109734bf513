"""``python -m bidi_tts.gateway``: run the local SageMaker runtime stand-in in front of a container."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import tempfile
from pathlib import Path

from bidi_tts.gateway.config import Faults, GatewayConfig
from bidi_tts.gateway.server import Gateway, ListenError


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0..65535; 0 picks a free one)")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bidi_tts.gateway",
        description="A local stand-in for the SageMaker runtime edge: serves "
        "InvokeEndpointWithBidirectionalStream over TLS + HTTP/2 and forwards each stream to a "
        "container's WebSocket as SageMaker does; on the same port, InvokeEndpoint and "
        "InvokeEndpointWithResponseStream (boto3, HTTP/1.1) forwarded to the container's "
        "POST /invocations. Point the SDK at the printed URL and trust the printed CA file.",
    )
    parser.add_argument("--upstream", required=True, help="container base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8443, help="port to listen on; 0 picks a free one "
                        "(default 8443)")
    parser.add_argument("--cert-dir", type=Path, default=None, help="where to write the throwaway CA as "
                        "ca.pem (default: a new temporary directory)")
    parser.add_argument("--endpoint-name", action="append", default=None, metavar="NAME",
                        help="serve only this endpoint name (repeatable; default: any name); "
                        "others get 400 InputValidationError")
    parser.add_argument("--connect-timeout", type=float, default=5.0,
                        help="seconds to open the container WebSocket before answering 424 (default 5)")
    parser.add_argument("--ping-interval", type=float, default=60.0,
                        help="seconds between pings to the container (default 60, like SageMaker)")
    parser.add_argument("--ping-misses", type=int, default=5,
                        help="unanswered pings in a row before closing with 1011 (default 5, like SageMaker)")
    faults = parser.add_argument_group("fault injection (for reliability tests)")
    faults.add_argument("--latency", type=float, default=0.0, metavar="SECONDS",
                        help="delay added before forwarding each event, both directions")
    faults.add_argument("--drop-after", type=int, default=None, metavar="N",
                        help="reset the HTTP/2 stream after N response events")
    faults.add_argument("--stall-after", type=int, default=None, metavar="N",
                        help="stop forwarding responses after N events, keeping the stream open")
    faults.add_argument("--fail-after", type=int, default=None, metavar="N",
                        help="send InternalStreamFailure after N response events")
    faults.add_argument("--reject", type=int, default=None, choices=(400, 424, 500, 503), metavar="STATUS",
                        help="answer every invocation with this HTTP error (400, 424, 500 or 503)")
    parser.add_argument("--log-level", default="INFO",
                        help="logging level; DEBUG logs every frame sent to the container")
    return parser


def config_from_args(args: argparse.Namespace, cert_dir: Path) -> GatewayConfig:
    return GatewayConfig(
        upstream=args.upstream,
        cert_dir=cert_dir,
        host=args.host,
        port=args.port,
        endpoint_names=frozenset(args.endpoint_name) if args.endpoint_name else None,
        connect_timeout_s=args.connect_timeout,
        ping_interval_s=args.ping_interval,
        ping_misses=args.ping_misses,
        faults=Faults(
            latency_s=args.latency,
            drop_after=args.drop_after,
            stall_after=args.stall_after,
            fail_after=args.fail_after,
            reject_status=args.reject,
        ),
    )


async def _serve(config: GatewayConfig) -> None:
    gateway = Gateway(config)
    await gateway.start()
    print(f"gateway listening on {gateway.url}", flush=True)
    print(f"CA certificate: {gateway.ca_file}", flush=True)
    print(f"forwarding to {config.upstream}", flush=True)
    try:
        await gateway.serve_forever()
    finally:
        await gateway.close()


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    with contextlib.ExitStack() as stack:
        cert_dir = args.cert_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gateway-")))
        try:
            config = config_from_args(args, cert_dir)
            config.upstream_ws_base()
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
        try:
            asyncio.run(_serve(config))
        except KeyboardInterrupt:
            pass
        except ListenError as exc:
            raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
