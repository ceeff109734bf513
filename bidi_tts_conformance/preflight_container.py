"""``--container-url``: something listens, answers HTTP, and is a TTS container.

A container answers ``/ping`` 200 (SM-PING), or 503 while it loads (waited for, :mod:`.preflight_ping`);
an HTTP server whose ``/ping`` says anything else is still taken when a WebSocket opens at the
default route (``/invocations-bidirectional-stream``), else it is not a container.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from bidi_tts.protocol import WS_PATH
from bidi_tts_conformance.preflight_net import CONNECT_TIMEOUT_S, Unreachable, connect
from bidi_tts_conformance.preflight_ping import Progress, ping, wait_loading
from bidi_tts_conformance.targets import READY_TIMEOUT_S

DEFAULT_READY_TIMEOUT_S = READY_TIMEOUT_S  # SM-PING: /ping must answer 200 within 8 minutes of start


def progress_line(message: str) -> None:
    """A progress line on stdout, as the suite prints its own."""
    print(f"[conformance] {message}", flush=True)


def check_url(url: str, *, ready_timeout: float = DEFAULT_READY_TIMEOUT_S,
              progress: Progress = progress_line, ws_path: str = WS_PATH) -> None:
    """Something listens at `url`, answers HTTP, and is a container: /ping 200, or a WebSocket at the
    default route. /ping 503 (loading) is waited for, up to `ready_timeout` seconds, with progress."""
    connect(url, "--container-url")
    status = ping(url)
    if status == 503:
        status = wait_loading(url, ready_timeout, progress)
    if status == 200:
        return
    problem = websocket_problem(url, ws_path=ws_path)
    if problem is not None:
        raise Unreachable(f"--container-url {url} is not a TTS container: GET /ping answered {status} and "
                          f"{problem}")


def websocket_problem(url: str, timeout: float = CONNECT_TIMEOUT_S, *, ws_path: str = WS_PATH) -> str | None:
    """None when a WebSocket opens at `ws_path` (the dialect's route; the default route unless told);
    else what happened instead."""
    from websockets.exceptions import InvalidMessage, InvalidStatus
    from websockets.sync.client import connect as ws_connect

    parts = urlsplit(url)
    ws_url = f"{'wss' if parts.scheme == 'https' else 'ws'}://{parts.netloc}{parts.path.rstrip('/')}{ws_path}"
    try:
        with ws_connect(ws_url, open_timeout=timeout, close_timeout=1):
            return None
    except InvalidStatus as exc:
        return f"the WebSocket handshake at {ws_path} got HTTP {exc.response.status_code}"
    except InvalidMessage:
        return f"no WebSocket at {ws_path} (the handshake got no valid HTTP/1.1 answer)"
    except TimeoutError:
        return f"no WebSocket handshake answer at {ws_path} within {timeout:.0f} s"
    except Exception as exc:  # any other failed handshake says the same: no WebSocket here
        return f"no WebSocket at {ws_path} ({type(exc).__name__}: {exc})"
