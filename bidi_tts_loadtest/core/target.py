"""What a load run talks to: a container URL (``--host``) or a SageMaker endpoint, validated up front."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bidi_tts.dialects import DEFAULT_DIALECT, DIALECTS, Dialect, dialect_named
from bidi_tts_loadtest.core.turn import ClosableSyncTransport

#: Used when neither --region nor AWS_REGION / AWS_DEFAULT_REGION is set (as the conformance suite).
DEFAULT_REGION = "us-east-1"
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")


def add_target_arguments(group: Any) -> list[Any]:
    """--endpoint-name, --region, --endpoint-url, --endpoint-ca on an argparse group; the actions."""
    return [
        group.add_argument("--endpoint-name", default=None,
                           help="SageMaker endpoint to load instead of a container URL"),
        group.add_argument("--region", default=None,
                           help=f"AWS region of --endpoint-name (default: AWS_REGION, else {DEFAULT_REGION})"),
        group.add_argument("--endpoint-url", default=None,
                           help="SageMaker runtime URL, e.g. the local stand-in's https://127.0.0.1:8443"),
        group.add_argument("--endpoint-ca", default=None,
                           help="CA certificate file that --endpoint-url presents (the stand-in's ca.pem)"),
    ]


def add_dialect_argument(group: Any) -> Any:
    """--dialect on an argparse group (the Locust run and the ladders); the action."""
    return group.add_argument("--dialect", choices=tuple(DIALECTS), default=DEFAULT_DIALECT,
                              help=f"wire protocol of the sessions (default {DEFAULT_DIALECT}; docs/dialects.md)")


def dialect_of(options: Any) -> Dialect:
    return dialect_named(getattr(options, "dialect", None) or DEFAULT_DIALECT)


def region(options: Any) -> str:
    return (getattr(options, "region", None) or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION)


def container_url_problem(url: str | None) -> str | None:
    """Why `url` is not a container URL (None when it is one)."""
    if not url:
        return "give a container URL (--host http://HOST:PORT) or --endpoint-name"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.netloc:
        return f"{url!r} is not a container URL: write it with its scheme, e.g. http://{url.split('/')[0]}"
    return None


def target_problem(options: Any, host: str | None) -> str | None:
    """Why the target options cannot work (None when they can), found before any session starts."""
    if not getattr(options, "endpoint_name", None):
        return container_url_problem(host)
    reg = region(options)
    if not _REGION.match(reg):
        return f"--region {reg!r} is not an AWS region name (e.g. us-east-1)"
    url = getattr(options, "endpoint_url", None)
    if url is not None and (urlsplit(url).scheme != "https" or not urlsplit(url).netloc):
        return f"--endpoint-url {url!r} must be an https:// URL (the SageMaker runtime speaks TLS + HTTP/2)"
    ca = getattr(options, "endpoint_ca", None)
    if ca is not None and not Path(ca).is_file():
        return f"--endpoint-ca {ca!r}: no such file"
    return None


def open_sync_transport(options: Any, host: str | None) -> ClosableSyncTransport:
    """Open one session in the options' dialect, blocking the calling greenlet or thread only."""
    dialect = dialect_of(options)
    return _speaking(dialect, _open_wire(options, host, dialect))


def _open_wire(options: Any, host: str | None, dialect: Dialect) -> ClosableSyncTransport:
    if getattr(options, "endpoint_name", None):
        from bidi_tts.transports.sagemaker import SageMakerTarget, SageMakerTransport
        from bidi_tts_loadtest.core.async_bridge import BridgedTransport

        target = SageMakerTarget(options.endpoint_name, region(options), options.endpoint_url,
                                 options.endpoint_ca, invocation_path=dialect.invocation_path)
        return BridgedTransport.open(lambda: SageMakerTransport.open(target))
    problem = container_url_problem(host)
    if problem is not None:
        raise ValueError(problem)
    from bidi_tts.transports.websocket import websocket_url
    from bidi_tts.transports.websocket_sync import SyncWebSocketTransport

    assert host is not None
    return SyncWebSocketTransport.open(host if dialect.is_identity else websocket_url(host, dialect.ws_path))


def _speaking(dialect: Dialect, wire: ClosableSyncTransport) -> ClosableSyncTransport:
    if dialect.is_identity:
        return wire
    from bidi_tts.transports.dialect import SyncDialectTransport

    return SyncDialectTransport(wire, dialect.translator())
