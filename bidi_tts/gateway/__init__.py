"""A local stand-in for the SageMaker runtime edge (TLS + HTTP/2 event stream <-> container WebSocket;
on the same port, boto3's InvokeEndpoint routes over HTTP/1.1 <-> the container's POST /invocations).

Run it with ``python -m bidi_tts.gateway --upstream URL --port PORT --cert-dir DIR``; embed it with
:class:`Gateway` (async) or :class:`GatewayThread`.
"""

from bidi_tts.gateway.bridge import FrameRecord
from bidi_tts.gateway.config import Faults, GatewayConfig
from bidi_tts.gateway.server import Gateway, GatewayThread

__all__ = ["Faults", "FrameRecord", "Gateway", "GatewayConfig", "GatewayThread"]
