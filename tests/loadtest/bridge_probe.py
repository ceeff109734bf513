"""Run under gevent: a turn over the asyncio WebSocketTransport through loadtest.async_bridge.

Prints one JSON line: TTFAs measured, and how often a ticker greenlet ran meanwhile (the hub was
never blocked if it kept ticking). Used by test_async_bridge.py in a subprocess.
"""

from gevent import monkey

monkey.patch_all()

import itertools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402

from bidi_tts.session import ClientSession  # noqa: E402
from bidi_tts.transports.websocket import WebSocketTransport  # noqa: E402
from bidi_tts_loadtest.core.async_bridge import BridgedTransport  # noqa: E402
from bidi_tts_loadtest.core.turn import TurnConfig, run_turn  # noqa: E402

url = sys.argv[1]
ticks = []


def ticker() -> None:
    while True:
        ticks.append(time.perf_counter())
        gevent.sleep(0.01)


g = gevent.spawn(ticker)
started = time.perf_counter()
transport = BridgedTransport.open(lambda: WebSocketTransport.open(url))
session = ClientSession()
result = run_turn(transport, session, "First sentence here. Second one now. And a third.",
                  TurnConfig(tokens_per_second=100))
transport.send(session.close())
closed = transport.wait_closed(10)
elapsed = time.perf_counter() - started
g.kill()
gaps = [b - a for a, b in itertools.pairwise(ticks)]
print(json.dumps({"ttfa_ms": [m.ttfa_s * 1000 for m in result.metrics if m.ttfa_s is not None],
                  "failure": result.failure, "close_code": closed.code, "elapsed_s": elapsed,
                  "ticks": len(ticks), "max_tick_gap_ms": max(gaps) * 1000 if gaps else None}))
