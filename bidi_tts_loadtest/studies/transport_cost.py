"""What the transport costs: bytes on the wire, frame reassembly, and latency per hop.

    uv run python -m loadtest.transport_cost [--clips 24 --clip-bytes 99850] [--messages 200] [--json OUT]

1. **Bytes.** The same PCM clips (by default 24 clips of 99,850 bytes: the 2,396,400 bytes of the
   AWS post on bidirectional streaming) sent as a container streams them, in 100 ms frames: raw
   PCM in ``PayloadPart`` events over the bidirectional stream (event-stream envelope included)
   vs base64 inside SSE ``data: {"audio": "..."}`` events (the batch route of the seeds).
2. **Reassembly.** CPU time for a client to turn deliveries of N bytes (HTTP/2 DATA frames split
   events anywhere) back into PCM: the event-stream decoder vs the SSE decoder plus base64.
3. **Latency per hop.** Median time from a send to the first audio frame against a container
   with no synthesis delay (``loadtest.known_latency --ttfa-ms 0``): directly over its WebSocket,
   and through the local SageMaker stand-in (``python -m bidi_tts.gateway``, SDK on TLS + HTTP/2);
   the difference is what the extra hop adds on loopback. Each side runs in its own process.

The stand-in needs no real AWS account; when no credentials are set, dummy ones are used for it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bidi_tts import probe
from bidi_tts.deadline import Deadline
from bidi_tts.frames import FrameKind
from bidi_tts.gateway import codec
from bidi_tts.local_container import free_port
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession
from bidi_tts.sse import SSEDecoder, decode_audio_events, encode_event
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.core.arg_types import positive_int

POST_PCM_BYTES, POST_SSE_BYTES, POST_CLIPS = 2_396_400, 3_195_200, 24
FRAME_BYTES = 4_800  # 100 ms of 24 kHz 16-bit mono, as the reference container streams


def clip_frames(clip_bytes: int) -> list[bytes]:
    """One clip's PCM (a deterministic ramp) cut into the frames a container would send."""
    pcm = bytes((i * 7) & 0xFF for i in range(clip_bytes))
    return [pcm[i:i + FRAME_BYTES] for i in range(0, clip_bytes, FRAME_BYTES)]


def sse_event(frame: bytes) -> bytes:
    return encode_event(json.dumps({"audio": base64.b64encode(frame).decode("ascii")}))


def wire_bytes(clips: int, clip_bytes: int) -> dict[str, Any]:
    frames = clip_frames(clip_bytes)
    pcm = clips * sum(len(f) for f in frames)
    bidi = clips * sum(len(codec.payload_part(f, FrameKind.BINARY)) for f in frames)
    b64 = clips * sum(4 * math.ceil(len(f) / 3) for f in frames)
    sse = clips * sum(len(sse_event(f)) for f in frames)
    return {"clips": clips, "frames_per_clip": len(frames), "pcm_bytes": pcm, "bidi_event_stream_bytes": bidi,
            "base64_bytes": b64, "sse_bytes": sse, "base64_overhead": b64 / pcm - 1,
            "sse_overhead": sse / pcm - 1, "bidi_overhead": bidi / pcm - 1,
            "post": {"pcm_bytes": POST_PCM_BYTES, "sse_bytes": POST_SSE_BYTES, "clips": POST_CLIPS,
                     "overhead": POST_SSE_BYTES / POST_PCM_BYTES - 1}}


def _deliveries(stream: bytes, size: int) -> list[bytes]:
    return [stream[i:i + size] for i in range(0, len(stream), size)]


def _best_time(work: Any, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def reassembly(clip_bytes: int, delivery_sizes: list[int], repeat: int = 5) -> list[dict[str, Any]]:
    frames = clip_frames(clip_bytes)
    pcm = b"".join(frames)
    audio_s = len(pcm) / 48_000
    bidi_stream = b"".join(codec.payload_part(f, FrameKind.BINARY) for f in frames)
    sse_stream = b"".join(sse_event(f) for f in frames)
    rows = []
    for size in delivery_sizes:
        bidi_parts, sse_parts = _deliveries(bidi_stream, size), _deliveries(sse_stream, size)

        def bidi(bidi_parts: list[bytes] = bidi_parts) -> bytes:
            decoder = codec.EventStreamDecoder()
            return b"".join(m.payload for part in bidi_parts for m in decoder.feed(part))

        def sse(sse_parts: list[bytes] = sse_parts) -> bytes:
            decoder = SSEDecoder()
            return decode_audio_events(e for part in sse_parts for e in decoder.feed(part))

        assert bidi() == pcm and sse() == pcm  # both give back exactly the audio sent
        rows.append({"delivery_bytes": size,
                     "bidi_us_per_audio_s": _best_time(bidi, repeat) / audio_s * 1e6,
                     "sse_us_per_audio_s": _best_time(sse, repeat) / audio_s * 1e6})
    return rows


# -- latency per hop --------------------------------------------------------------------------------
def _wait_port(port: int, proc: subprocess.Popen[str], what: str) -> None:
    deadline = Deadline(30)
    while not deadline.expired:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            probe.connect(f"http://127.0.0.1:{port}", timeout=0.2)
            return
        except probe.Unanswered:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within 30 s")


async def _first_audio_ms(transport: Any, messages: int, tag: str) -> list[float]:
    """Send `messages` one at a time on one session; the send-to-first-audio time of each, in ms."""
    session = ClientSession()
    out = []
    for i in range(messages):
        request_id = f"{tag}{i}"
        payload = session.synthesize(SynthesizeRequest(text=f"Hop {i}.", request_id=request_id),
                                     at=time.perf_counter())
        sent = time.perf_counter()
        await transport.send(payload, kind=FrameKind.TEXT)
        while not session.records[request_id].done:
            session.receive_frame(await transport.receive(timeout=10))
        first = session.records[request_id].first_audio_at
        if first is None:
            raise RuntimeError("a message ended without audio")
        out.append((first - sent) * 1000)
    return out


async def _measure(container: str, gateway: str, ca: str, messages: int) -> dict[str, Any]:
    from bidi_tts.transports.sagemaker import SageMakerTarget, SageMakerTransport
    from bidi_tts.transports.websocket import WebSocketTransport

    opened: dict[str, list[float]] = {"direct": [], "stand-in": []}
    first: dict[str, list[float]] = {}
    for name in ("direct", "stand-in"):
        for attempt in range(6):
            started = time.perf_counter()
            if name == "direct":
                transport: Any = await WebSocketTransport.open(container)
            else:
                transport = await SageMakerTransport.open(SageMakerTarget("transport-cost", "us-east-1", gateway, ca))
            opened[name].append((time.perf_counter() - started) * 1000)
            try:
                if attempt == 0:
                    await _first_audio_ms(transport, 5, "warm")
                    first[name] = await _first_audio_ms(transport, messages, "m")
            finally:
                await transport.close()
    direct, via = statistics.median(first["direct"]), statistics.median(first["stand-in"])
    return {"messages": messages, "first_audio_ms_median": {"direct": direct, "stand-in": via},
            "added_ms_per_hop": via - direct,
            "open_ms_median": {k: statistics.median(v[1:]) for k, v in opened.items()}}


def hop_latency(messages: int) -> dict[str, Any]:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIDLOCALSTANDIN")  # the local stand-in checks none
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local-stand-in-only")
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    container_port, gateway_port = free_port(), free_port()
    certs = Path(os.environ.get("TMPDIR", "/tmp")) / f"transport-cost-{os.getpid()}"
    procs: list[subprocess.Popen[str]] = []
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "bidi_tts_loadtest.studies.known_latency",
                                       "--port", str(container_port), "--ttfa-ms", "0", "--frames", "1"], text=True))
        _wait_port(container_port, procs[-1], "the container")
        procs.append(subprocess.Popen([sys.executable, "-m", "bidi_tts.gateway", "--upstream",
                                       f"http://127.0.0.1:{container_port}", "--port", str(gateway_port),
                                       "--cert-dir", str(certs), "--log-level", "WARNING"],
                                      text=True, stdout=subprocess.DEVNULL))
        _wait_port(gateway_port, procs[-1], "the stand-in")
        ca_wait = Deadline(30)  # the port may answer before the CA is on disk (or be another's)
        while not (certs / "ca.pem").is_file():
            if ca_wait.expired or procs[-1].poll() is not None:
                raise RuntimeError(f"the stand-in wrote no CA certificate in {certs} within 30 s")
            time.sleep(0.05)
        return asyncio.run(_measure(f"http://127.0.0.1:{container_port}", f"https://127.0.0.1:{gateway_port}",
                                    str(certs / "ca.pem"), messages))
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)


def print_table(result: dict[str, Any]) -> None:
    w = result["bytes"]
    post = w["post"]
    print(f"Bytes on the wire for the same audio ({w['clips']} clips, {w['frames_per_clip']} frames each)")
    print(f"  {'route':<40} {'bytes':>12} {'vs PCM':>8}")
    print(f"  {'raw PCM (payload)':<40} {w['pcm_bytes']:>12,} {'':>8}")
    print(f"  {'bidi: PCM in PayloadPart events':<40} {w['bidi_event_stream_bytes']:>12,} {w['bidi_overhead']:>+8.1%}")
    print(f"  {'base64 of the same PCM':<40} {w['base64_bytes']:>12,} {w['base64_overhead']:>+8.1%}")
    print(f"  {'SSE: base64 in data: JSON events':<40} {w['sse_bytes']:>12,} {w['sse_overhead']:>+8.1%}")
    print(f"  {'AWS post: PCM -> base64 SSE':<40} {post['pcm_bytes']:>12,} -> {post['sse_bytes']:,} "
          f"({post['overhead']:+.1%})")
    print("Reassembly CPU per second of audio, deliveries split events anywhere")
    print(f"  {'delivery bytes':>14} {'bidi us':>10} {'SSE+base64 us':>14} {'ratio':>6}")
    for r in result["reassembly"]:
        print(f"  {r['delivery_bytes']:>14,} {r['bidi_us_per_audio_s']:>10.1f} {r['sse_us_per_audio_s']:>14.1f} "
              f"{r['sse_us_per_audio_s'] / r['bidi_us_per_audio_s']:>6.1f}")
    if "hop" in result:
        h = result["hop"]
        m = h["first_audio_ms_median"]
        print(f"Latency per hop (median of {h['messages']} messages, send to first audio, loopback)")
        print(f"  direct WebSocket {m['direct']:.2f} ms; through the stand-in {m['stand-in']:.2f} ms; "
              f"added per hop {h['added_ms_per_hop']:.2f} ms")
        o = h["open_ms_median"]
        print(f"  session open: direct {o['direct']:.1f} ms; stand-in (SDK, TLS, HTTP/2) {o['stand-in']:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = exit_codes.Parser(prog="python -m loadtest.transport_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=positive_int, default=POST_CLIPS, help="clips of audio (default 24)")
    parser.add_argument("--clip-bytes", type=positive_int, default=POST_PCM_BYTES // POST_CLIPS,
                        help="PCM bytes per clip (default 99850: the post's 2,396,400 bytes over 24 clips)")
    parser.add_argument("--delivery-bytes", type=positive_int, nargs="+", default=[1_000, 16_384, 65_536],
                        help="delivery sizes for the reassembly cost (default 1000 16384 65536)")
    parser.add_argument("--messages", type=positive_int, default=200,
                        help="messages per route for the latency per hop (default 200)")
    parser.add_argument("--skip-hop", action="store_true", help="bytes and reassembly only (no processes)")
    parser.add_argument("--json", default=None, help="write the result here")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"bytes": wire_bytes(args.clips, args.clip_bytes),
                              "reassembly": reassembly(args.clip_bytes, args.delivery_bytes)}
    if not args.skip_hop:
        try:
            result["hop"] = hop_latency(args.messages)
        except (RuntimeError, OSError) as exc:
            print(f"transport_cost: {exc}", file=sys.stderr)
            return exit_codes.RUN_FAILED
    print_table(result)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
