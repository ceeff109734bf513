"""Settings of the SageMaker runtime stand-in, including its optional fault injection."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


@dataclass(frozen=True, slots=True)
class Faults:
    """Misbehaviour to inject, for reliability tests. Counts are response events per stream."""

    latency_s: float = 0.0  # added before forwarding each event, both directions
    drop_after: int | None = None  # reset the HTTP/2 stream (RST_STREAM) after N response events
    stall_after: int | None = None  # stop forwarding responses after N events (stream stays open)
    fail_after: int | None = None  # send InternalStreamFailure after N response events
    reject_status: int | None = None  # answer every invocation with 400/424/500/503 before streaming


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """Where the stand-in listens, which container it fronts, and how it behaves."""

    upstream: str  # container base URL, e.g. http://127.0.0.1:8080
    cert_dir: Path
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port chosen by the OS
    endpoint_names: frozenset[str] | None = None  # None: any endpoint name is served
    connect_timeout_s: float = 5.0
    ping_interval_s: float = 60.0  # SM-PINGPONG: SageMaker pings every 60 s ...
    ping_misses: int = 5  # ... and closes after 5 unanswered pings
    invoke_timeout_s: float = 60.0  # InvokeEndpoint(WithResponseStream): the container's answer within 60 s
    linger_s: float = 30.0  # how long a finished response waits for the client to end its request
    faults: Faults = field(default_factory=Faults)

    def upstream_ws_base(self) -> str:
        """The container's ws:// (or wss://) origin, without a path."""
        parts = urlsplit(self.upstream)
        scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
        if scheme is None or not parts.netloc:
            raise ValueError(f"--upstream must be an http(s) URL, not {self.upstream!r}")
        return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
