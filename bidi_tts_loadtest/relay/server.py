"""Binding and running the relay: a checked listening socket, a background thread, an upstream probe."""

from __future__ import annotations

import argparse
import asyncio
import errno
import socket
import threading
import time

import uvicorn

from bidi_tts.deadline import Deadline
from bidi_tts.transports.base import ConnectError
from bidi_tts.transports.sagemaker import SageMakerTarget
from bidi_tts_loadtest.relay.app import Relay
from bidi_tts_loadtest.relay.upstream import Unreachable, Upstream, UsageError


def add_upstream_options(parser: argparse.ArgumentParser) -> None:
    """--container-url | --endpoint-name (with --region, --endpoint-url, --endpoint-ca)."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--container-url", metavar="URL", help="a container's base URL, e.g. http://127.0.0.1:8080")
    group.add_argument("--endpoint-name", metavar="NAME", help="a SageMaker endpoint (bidirectional streaming)")
    parser.add_argument("--region", default="us-east-1", help="the endpoint's AWS region (default us-east-1)")
    parser.add_argument("--endpoint-url", default=None, metavar="URL",
                        help="another SageMaker runtime edge, e.g. the local stand-in python -m bidi_tts.gateway")
    parser.add_argument("--endpoint-ca", default=None, metavar="PEM",
                        help="CA certificate that --endpoint-url presents")


def upstream_from(args: argparse.Namespace) -> Upstream:
    """The Upstream the options name; UsageError (one line) when they are wrong."""
    if args.endpoint_name is not None:
        target = SageMakerTarget(args.endpoint_name, region=args.region, endpoint_url=args.endpoint_url,
                                 ca_file=args.endpoint_ca)
        return Upstream(target=target)
    return Upstream(container_url=args.container_url)


def probe(upstream: Upstream, timeout_s: float = 10.0) -> None:
    """Open and close one upstream session, so that a wrong target fails before anything starts."""

    async def once() -> None:
        transport, _ = await upstream.open()
        await transport.close()

    try:
        asyncio.run(asyncio.wait_for(once(), timeout_s))
    except ConnectError as exc:
        raise Unreachable(f"cannot reach the upstream: {exc}") from None
    except TimeoutError:
        raise Unreachable(f"the upstream {upstream.describe()} did not answer within {timeout_s:g} s") from None


def listen(host: str, port: int) -> socket.socket:
    """A bound, listening socket on host:port (0: a free port); UsageError when it cannot be had."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise UsageError(f"cannot listen on {host}:{port}: unknown host") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = "the port is in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or type(exc).__name__)
        raise UsageError(f"cannot listen on {host}:{port}: {why}") from None
    return sock


class RelayServer:
    """The relay served by uvicorn on a socket from :func:`listen`, in a background thread."""

    def __init__(self, relay: Relay, sock: socket.socket) -> None:
        self.sock = sock
        config = uvicorn.Config(relay.app(), log_level="warning", ws="websockets-sansio", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True,
                                       name="relay")

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def __enter__(self) -> RelayServer:
        self.thread.start()
        deadline = Deadline(10)
        while not self.server.started:
            if deadline.expired or not self.thread.is_alive():
                raise RuntimeError("the relay did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
