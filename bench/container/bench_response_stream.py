"""What the stand-in's response-stream route adds to POST /invocations: time to the first body
bytes and to the last, direct to a container and through boto3's InvokeEndpointWithResponseStream
-> the stand-in (TLS, HTTP/1.1, event-stream framing) -> the same container.

The container is the reference container with ``--backend timed --timed-profile h200-eager``
(synthesis times predicted by the profile, no model files), started here on a free port. Both
routes send the same text alternately, so load drifts hit them alike. Loopback only: this is the
stand-in's own overhead, not SageMaker's (whose edge is remote and unmeasured here).

Run: ``uv run python bench/container/bench_response_stream.py [--trials N] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bidi_tts.gateway import GatewayConfig, GatewayThread
from bidi_tts.local_container import LocalContainer
from bidi_tts.transports.sagemaker import SageMakerTarget
from bidi_tts.transports.sagemaker_response_stream import invoke_with_response_stream, response_stream_client

TEXT = "The quick brown fox jumps over the lazy dog. It was not amused, and said so twice."


def direct(url: str, body: bytes) -> tuple[float, float, int]:
    request = urllib.request.Request(url + "/invocations", data=body, headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    first = None
    size = 0
    with urllib.request.urlopen(request, timeout=60) as response:
        while data := response.read1(65536):
            first = first or time.perf_counter()
            size += len(data)
    return (first or time.perf_counter()) - start, time.perf_counter() - start, size


def via_stand_in(client: object, body: bytes) -> tuple[float, float, int]:
    reply = invoke_with_response_stream(client, "bench", body)
    size = sum(len(data) for _, data in reply.chunks())
    return reply.first_byte_s or 0.0, time.perf_counter() - reply.started, size


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": statistics.median(ordered) * 1000, "p90_ms": ordered[int(0.9 * (len(ordered) - 1))] * 1000,
            "max_ms": ordered[-1] * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.trials < 2:
        print("error: --trials must be at least 2", file=sys.stderr)
        return 4
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "stand-in")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "stand-in")
    container = LocalContainer(args=["--backend", "timed", "--timed-profile", "h200-eager"])
    try:
        if container.wait_ready(60).outcome != "ready":
            print("error: the reference container did not become ready", file=sys.stderr)
            return 70
        body = json.dumps({"text": TEXT}).encode()
        with tempfile.TemporaryDirectory() as certs, \
                GatewayThread(GatewayConfig(upstream=container.url, cert_dir=Path(certs))) as gw:
            client = response_stream_client(SageMakerTarget("bench", endpoint_url=gw.url, ca_file=gw.ca_file))
            direct(container.url, body), via_stand_in(client, body)  # warm-up
            rows: dict[str, list[tuple[float, float, int]]] = {"direct": [], "stand_in": []}
            for trial in range(args.trials):
                rows["direct"].append(direct(container.url, body))
                rows["stand_in"].append(via_stand_in(client, body))
                print(f"trial {trial + 1}/{args.trials}", end="\r", file=sys.stderr, flush=True)
    finally:
        container.stop()
    result = {"trials": args.trials, "text_chars": len(TEXT), "container": "reference --backend timed h200-eager"}
    for route, samples in rows.items():
        result[route] = {"first_byte": summary([s[0] for s in samples]), "complete": summary([s[1] for s in samples]),
                         "bytes": samples[0][2]}
    for route in rows:
        first, done = result[route]["first_byte"], result[route]["complete"]
        print(f"{route:9s} first byte p50 {first['p50_ms']:6.1f} ms p90 {first['p90_ms']:6.1f} ms | "
              f"complete p50 {done['p50_ms']:6.1f} ms p90 {done['p90_ms']:6.1f} ms")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
