"""Overload, limits and security of the REAL reference container (issue 7, parts 2 and 4).

The container runs with `MAX_QUEUE=2` (at most two messages admitted across sessions), so a small
burst is already beyond the bound; every other limit is the default one.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from bidi_tts.frames import FrameKind
from bidi_tts.protocol import ERROR_MESSAGES, ErrorCode, Limits
from bidi_tts.session import MessageRecord
from bidi_tts.transports.base import TransportClosed, TransportTimeout
from bidi_tts.transports.websocket import WebSocketTransport
from tests.hardening.test_container_support import (
    Container,
    PingWatch,
    container_fixture,
    one_message,
    own_sockets,
)

pytestmark = pytest.mark.slow

MAX_QUEUE = 2
container = container_fixture({"MAX_QUEUE": str(MAX_QUEUE)})
LIMITS = Limits()  # the container's defaults: 5,000 characters, 256 KiB messages

# Every message a peer may ever read in an error frame: the fixed texts and the few templates that
# quote only validated values (numbers, a voice name that matched [a-z]{2}_[a-z0-9]{1,32}).
FIXED_MESSAGES = set(ERROR_MESSAGES.values()) | {"Too many messages are waiting in this session."}
TEMPLATES = [
    re.compile(r"Field 'text' has \d+ characters; this container accepts at most \d+\."),
    re.compile(r"Field 'speed' must be a finite number from [\d.]+ to [\d.]+\."),
    re.compile(r"Field 'sample_rate' must be one of [\d, ]+ Hz\."),
    re.compile(r"Unknown voice '[a-z]{2}_[a-z0-9]{1,32}'; see the container's voice list\."),
]
LEAK_MARKERS = ("Traceback", "Error", "Exception", 'File "', "object at 0x", "line ", "\\u", "\ud800")


def _allowed(message: str) -> bool:
    return message in FIXED_MESSAGES or any(t.fullmatch(message) for t in TEMPLATES)


async def _exchange(
    url: str, payload: bytes | str, kind: FrameKind, deadline_s: float = 90
) -> tuple[list[dict[str, Any]], int | None, str]:
    """Send one payload in a fresh session; return its control frames and the close (code, reason)
    once it is answered (error or synthesis_complete) or the container closes."""
    transport = await WebSocketTransport.open(url, open_timeout=10)
    controls: list[dict[str, Any]] = []
    try:
        await transport.send(payload, kind=kind)
        end = time.monotonic() + deadline_s
        while True:
            frame = await transport.receive(timeout=max(0.01, end - time.monotonic()))
            if frame.kind is FrameKind.TEXT:
                control = json.loads(frame.payload)
                controls.append(control)
                if control.get("type") in ("error", "synthesis_complete"):
                    # A fatal error frame is followed by a close: give it a moment to arrive.
                    try:
                        await transport.receive(timeout=0.5)
                    except TransportTimeout:
                        return controls, None, ""
    except TransportClosed as closed:
        return controls, closed.code, closed.reason
    finally:
        await transport.close()


# -- overload ------------------------------------------------------------------------------------
async def test_burst_beyond_the_queue_bound_gets_busy_not_hangs(container: Container) -> None:
    url = container.base_url
    burst, deadline_s = 4 * MAX_QUEUE, 180.0

    async def timed(i: int) -> tuple[float, MessageRecord]:
        started = time.monotonic()
        record = await one_message(url, f"Burst message {i}.", deadline_s=deadline_s, request_id=f"b{i}")
        return time.monotonic() - started, record

    with PingWatch(url) as ping:
        results = await asyncio.wait_for(asyncio.gather(*(timed(i) for i in range(burst))), deadline_s + 30)
        after = await one_message(url, "After the burst.", deadline_s=deadline_s)
    busy = [t for t, r in results if r.error_code == "busy"]
    done = [t for t, r in results if r.completed_at is not None]
    print(f"\nburst of {burst} (queue bound {MAX_QUEUE}): {len(done)} complete, {len(busy)} busy; "
          f"busy answered within {max(busy, default=0):.2f} s, complete within {max(done, default=0):.2f} s")
    assert len(busy) + len(done) == burst, [r for _, r in results]
    assert busy, "no message was refused with 'busy' beyond the queue bound"
    assert done, "no message of the burst was synthesized"
    assert max(busy) < 15.0, f"a 'busy' answer took {max(busy):.1f} s: refusals must not wait"
    assert after.completed_at is not None and after.error_code is None, after
    ping.assert_healthy()


# -- security: no internal text ------------------------------------------------------------------
HOSTILE: list[tuple[str, bytes | str]] = [
    ("not utf-8", b"\xff\xfe\x00{"),
    ("raw NUL inside a JSON string", b'{"text": "a\x00b"}'),
    ("escaped NUL in text", '{"text": "a\\u0000b."}'),
    ("lone surrogate text", '{"text": "\\ud800"}'),
    ("lone surrogate voice", '{"text": "Hi.", "voice": "\\ud800"}'),
    ("lone surrogate request_id", '{"text": "Hi.", "request_id": "\\ud800"}'),
    ("lone surrogate type", '{"type": "\\udfff", "text": "Hi."}'),
    ("text number overflowing to inf", '{"text": 1e999}'),
    ("text list", '{"text": ["x"]}'),
    ("text object", '{"text": {"a": 1}}'),
    ("text true", '{"text": true}'),
    ("speed inf", '{"text": "Hi.", "speed": 1e999}'),
    ("speed 4000 digits", '{"text": "Hi.", "speed": ' + "9" * 4000 + "}"),
    ("speed 5000 digits", '{"text": "Hi.", "speed": ' + "9" * 5000 + "}"),
    ("speed string", '{"text": "Hi.", "speed": "fast"}'),
    ("sample_rate 1e300", '{"text": "Hi.", "sample_rate": 1e300}'),
    ("sample_rate negative", '{"text": "Hi.", "sample_rate": -24000}'),
    ("sample_rate string", '{"text": "Hi.", "sample_rate": "24000"}'),
    ("voice number", '{"text": "Hi.", "voice": 5}'),
    ("voice object", '{"text": "Hi.", "voice": {"$ne": 1}}'),
    ("type list", '{"type": ["close"]}'),
    ("type object", '{"type": {"a": 1}}'),
    ("request_id object", '{"text": "Hi.", "request_id": {"a": 1}, "voice": "zz_none"}'),
    ("deep nesting", "[" * 100_000),
    ("deep object nesting", '{"a":' * 40_000),
    ("BOM before JSON", '\ufeff{"text": "Hi."}'),
    ("JSON string", '"just a string"'),
    ("JSON null", "null"),
]


@pytest.mark.parametrize("kind", [FrameKind.BINARY, FrameKind.TEXT])
async def test_errors_never_echo_internal_exception_text(container: Container, kind: FrameKind) -> None:
    findings: list[str] = []
    for name, payload in HOSTILE:
        if kind is FrameKind.TEXT and isinstance(payload, bytes):
            continue  # not UTF-8 in a TEXT frame is the WebSocket layer's 1007, checked elsewhere
        if kind is FrameKind.BINARY and isinstance(payload, str):
            payload = payload.encode("utf-8", "surrogatepass")
        controls, code, reason = await _exchange(container.base_url, payload, kind)
        answered = [c for c in controls if c.get("type") in ("error", "synthesis_complete")]
        if not answered:
            findings.append(f"{name}: no answer (close {code} {reason!r}), frames {controls}")
        if code not in (None, 1000, 1007, 1009):
            findings.append(f"{name}: closed with {code} {reason!r}")
        if any(marker in reason for marker in LEAK_MARKERS):
            findings.append(f"{name}: close reason {reason!r}")
        for c in controls:
            if c.get("type") != "error":
                continue
            if c.get("code") not in {e.value for e in ErrorCode} or not _allowed(str(c.get("message"))):
                findings.append(f"{name}: error frame {c}")
            if c.get("code") == "internal":
                findings.append(f"{name}: 'internal' for bad input: {c}")
    assert not findings, "\n".join(findings)


# -- security: binding ---------------------------------------------------------------------------
def test_listens_only_on_the_requested_host_and_port(container: Container) -> None:
    sockets = own_sockets(container.pid)
    listening = sorted(r.local for r in sockets if r.table.startswith("tcp") and r.state == "0A")
    udp = [r.local for r in sockets if r.table.startswith("udp")]
    assert listening == [f"127.0.0.1:{container.port}"], listening
    assert not udp, udp


# -- limits --------------------------------------------------------------------------------------
def _padded(size: int) -> bytes:
    """A valid synthesize message of exactly `size` bytes (an ignored field carries the padding)."""
    head = b'{"text": "Hi.", "request_id": "pad", "pad": "'
    return head + b"x" * (size - len(head) - 2) + b'"}'


async def test_message_size_limit_is_exact_and_fatal_with_1009(container: Container) -> None:
    url, limit = container.base_url, LIMITS.max_message_bytes
    controls, code, _ = await _exchange(url, _padded(limit), FrameKind.BINARY)
    assert [c["type"] for c in controls] == ["synthesis_start", "synthesis_complete"], (controls, code)
    controls, code, _ = await _exchange(url, _padded(limit + 1), FrameKind.BINARY)
    assert code == 1009 and not controls, (code, controls)
    # The same bound holds for a fragmented message (limit on the whole, not per frame). The container
    # closes with part of the last fragment unread, and a socket closed with unread data sends a TCP
    # reset that can overtake its close frame (seen once in CI: code None): a reset is retried, at
    # most three tries, and one of them must show the 1009.
    body = _padded(limit + 1)
    codes: list[int | None] = []
    for _ in range(3):
        transport = await WebSocketTransport.open(url)
        await transport.send_fragmented([body[: limit // 2], body[limit // 2:]], kind=FrameKind.BINARY)
        codes.append((await transport.wait_closed(timeout=30)).code)
        if codes[-1] is not None:
            break
    assert codes[-1] == 1009 and set(codes) <= {None, 1009}, codes


async def test_text_limit_answers_text_too_long_and_the_session_goes_on(container: Container) -> None:
    transport = await WebSocketTransport.open(container.base_url)
    too_long = "a" * (LIMITS.max_text_chars + 1)
    await transport.send(json.dumps({"text": too_long, "request_id": "long"}), kind=FrameKind.BINARY)
    error = json.loads((await transport.receive(timeout=30)).payload)
    assert error["type"] == "error" and error["code"] == "text_too_long" and error["request_id"] == "long"
    assert _allowed(error["message"]), error
    # 1,000 characters are accepted (CONTRACT.md): start it, then cancel, to spare the CPU.
    await transport.send(json.dumps({"text": "Word " * 200, "request_id": "k"}), kind=FrameKind.BINARY)
    start = json.loads((await transport.receive(timeout=60)).payload)
    assert start["type"] == "synthesis_start" and start["request_id"] == "k", start
    await transport.send(json.dumps({"type": "cancel"}), kind=FrameKind.BINARY)
    while (frame := await transport.receive(timeout=60)).kind is not FrameKind.TEXT:
        pass
    complete = json.loads(frame.payload)
    assert complete["type"] == "synthesis_complete" and complete.get("cancelled") is True, complete
    await transport.send(json.dumps({"type": "close"}), kind=FrameKind.BINARY)
    assert (await transport.wait_closed(timeout=30)).code == 1000


PATH_VOICES = [
    "{fifo}", "../../../../..{fifo}", "af_heart/../../../..{fifo}", "af_heart.bin", "af_heart.pt",
    "../voices/af_heart", "/etc/passwd", "..\\..\\windows\\win.ini", "af_heart\x00.bin", "~root/af_heart",
    "file:///etc/passwd", "zz_notavoice",
]


async def test_path_like_voice_names_never_touch_the_filesystem(container: Container, tmp_path: Path) -> None:
    fifo = tmp_path / "af_heart"
    os.mkfifo(fifo)  # a reader opening it would block and be seen; a stat would not, but is harmless
    for template in PATH_VOICES:
        voice = template.format(fifo=fifo)
        controls, code, _ = await _exchange(
            container.base_url, json.dumps({"text": "Hi.", "voice": voice, "request_id": "v"}),
            FrameKind.BINARY,
        )
        assert [c.get("code") for c in controls] == ["unknown_voice"], (voice, controls, code)
        assert all(_allowed(c["message"]) for c in controls), controls
        assert str(tmp_path) not in json.dumps(controls)
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only if someone opened it to read
    except OSError:
        pass
    else:
        os.close(fd)
        pytest.fail(f"the container opened {fifo} for a voice name")
    fds = [os.readlink(f"/proc/{container.pid}/fd/{n}") for n in os.listdir(f"/proc/{container.pid}/fd")]
    assert not [f for f in fds if str(tmp_path) in f], fds
