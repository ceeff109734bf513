"""isolation.slow_reader.2: the POST form of the slow reader: a POST /invocations response left unread
must not stall the other sessions (a container that holds its model's lock across the response
stream's yield stalls every one of them)."""

from __future__ import annotations

import asyncio
import json
import socket
from urllib.parse import urlsplit

from bidi_tts_conformance.cases.frames import long_text
from bidi_tts_conformance.cases.isolation import WAITING_S, Stalled, serve_beside
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, Requires, case, not_judged, ok

POST_CHARS = 3_300  # about 66 s of audio at a usual pace: megabytes, more than the socket buffers hold (1,100 is not)
MIN_BODY_BYTES = 1_024  # less than this waiting is not "audio piling up"


async def _stall_post(base_url: str, text: str, voice: str) -> Stalled:
    """POST `text` on a socket with a tiny receive buffer and read nothing: the container's writes block
    after a few kilobytes."""
    parts = urlsplit(base_url)
    host = parts.hostname or "127.0.0.1"
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await asyncio.wait_for(loop.sock_connect(sock, (host, parts.port or 80)), 5.0)
    body = json.dumps({"text": text, "voice": voice}).encode()
    head = (f"POST /invocations HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    await asyncio.wait_for(loop.sock_sendall(sock, head + body), 5.0)

    async def drop() -> None:
        sock.close()

    async def body_waiting() -> int:
        """Body bytes there at once (within WAITING_S) when the stalled reader reads."""
        data = bytearray()
        try:
            while True:
                chunk = await asyncio.wait_for(loop.sock_recv(sock, 65_536), WAITING_S)
                if not chunk:
                    break
                data.extend(chunk)
                if len(data) > 64 * MIN_BODY_BYTES:
                    break
        except (TimeoutError, OSError):
            pass
        _, _, rest = bytes(data).partition(b"\r\n\r\n")
        return len(rest)

    return Stalled(drop, body_waiting)


@case("isolation.slow_reader.2", "a POST /invocations whose response is not read does not stall another session",
      clauses=["TTS-ISOLATION", "POST-INVOCATIONS"],
      expect="a WebSocket session's message completes while a POST's audio waits unread; NOT-JUDGED when the POST "
             "had no audio waiting, or on a target with no plain HTTP (SageMaker's edge buffers what it buffers)",
      requires=[Requires.INVOCATIONS])
async def slow_post_reader(ctx: CaseContext) -> Outcome:
    if ctx.base_url is None:
        return not_judged("the suite cannot hold a POST response unread on this target (no plain HTTP)")
    stalled = await _stall_post(ctx.base_url, long_text(POST_CHARS), ctx.options.voice)
    beside = await serve_beside(ctx, stalled, "a POST response was not read")
    if beside.failure is not None:
        if beside.held < MIN_BODY_BYTES:
            return not_judged(f"the other session was not served ({beside.failure.detail}), but the unread POST "
                              "had no audio waiting: the container had not yet made any for it (head-of-line "
                              "blocking, isolation.hol.1's subject, not a slow reader's doing)")
        raise CaseFailed(f"a session was stalled beside a POST /invocations whose response is not read "
                         f"({beside.held} bytes of it waiting, unread): {beside.failure.detail}",
                         expected="served beside the unread POST", actual=beside.failure.actual)
    if beside.held < MIN_BODY_BYTES:
        return not_judged(f"the other session was {beside.served}, but the unread POST had no audio waiting then: "
                          "the situation (a response piling up unread) did not occur")
    return ok(f"{beside.served} beside a POST holding {beside.held} unread bytes")
