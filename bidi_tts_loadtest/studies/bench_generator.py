"""How many concurrent sessions can one machine generate before its own timing error grows?

Runs the Locust users' code path (gevent, the sync websockets client, ``bidi_tts_loadtest.core.turn``) at rising
concurrency against ``loadtest.known_latency`` in a separate process. That server reports, in each
``synthesis_complete``, the TTFA it measured itself; the generator's timing error is the client's
TTFA minus the server's, message by message (it includes the loopback transit, a few tens of µs).

    uv run python -m loadtest.bench_generator --sessions 1 10 50 100 200 --seconds 10 --json out.json
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import gevent  # noqa: E402

from bidi_tts import probe  # noqa: E402
from bidi_tts.deadline import Deadline  # noqa: E402
from bidi_tts.frames import decode_control_frame  # noqa: E402
from bidi_tts.local_container import free_port  # noqa: E402
from bidi_tts.metrics import summarize  # noqa: E402
from bidi_tts.session import ClientSession  # noqa: E402
from bidi_tts.transports.base import Frame, TransportError  # noqa: E402
from bidi_tts.transports.websocket_sync import SyncWebSocketTransport  # noqa: E402
from bidi_tts_loadtest.core import exit_codes  # noqa: E402
from bidi_tts_loadtest.core.corpus import load_answers  # noqa: E402
from bidi_tts_loadtest.core.turn import TurnConfig, run_turn  # noqa: E402


class _Peek:
    """Wraps a transport to collect the server's own TTFA from synthesis_complete frames."""

    def __init__(self, inner: SyncWebSocketTransport, server: dict[str, float]) -> None:
        self.inner, self.server = inner, server

    def send(self, payload: Any, *, kind: Any = None) -> float:
        return self.inner.send(payload, kind=kind)

    def receive(self, timeout: float | None = None) -> Frame:
        frame = self.inner.receive(timeout)
        if frame.payload[:1] == b"{":
            control = decode_control_frame(frame.payload)
            if control and "server_ttfa_ms" in control:
                self.server[control["request_id"]] = float(control["server_ttfa_ms"])
        return frame


def _session_loop(url: str, deadline: Deadline, errors: list[float], config: TurnConfig, index: int) -> None:
    answers = load_answers()
    n = index
    while not deadline.expired:
        server: dict[str, float] = {}
        try:
            transport = _Peek(SyncWebSocketTransport.open(url), server)
        except TransportError:
            gevent.sleep(0.5)
            continue
        session = ClientSession()
        result = run_turn(transport, session, answers[n % len(answers)], config)
        n += 1
        for record, metrics in zip(result.records, result.metrics, strict=False):
            if metrics.ttfa_s is not None and record.request_id in server:
                errors.append(metrics.ttfa_s * 1000 - server[record.request_id])
        try:
            transport.inner.close()
        except TransportError:
            pass


def measure(url: str, sessions: int, seconds: float, tokens_per_second: float) -> dict[str, Any]:
    """Run `sessions` concurrent sessions for `seconds`; the error distribution in ms."""
    errors: list[float] = []
    config = TurnConfig(tokens_per_second=tokens_per_second)
    deadline = Deadline(seconds)
    greenlets = [gevent.spawn(_session_loop, url, deadline, errors, config, i) for i in range(sessions)]
    gevent.joinall(greenlets, timeout=seconds + 60)
    stats = summarize(errors)
    stats["sessions"] = sessions
    return stats


def main() -> None:
    parser = exit_codes.Parser(prog="python -m loadtest.bench_generator",
                               description="Load generator timing accuracy benchmark.")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 50, 100, 200])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--ttfa-ms", type=float, default=100.0)
    parser.add_argument("--tokens-per-second", type=float, default=40.0)
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()
    if any(n < 1 for n in args.sessions) or args.seconds <= 0 or args.ttfa_ms < 0 or args.tokens_per_second <= 0:
        parser.error("--sessions must be at least 1, --seconds and --tokens-per-second positive, --ttfa-ms at least 0")
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        parser.error(f"--json: folder {os.path.dirname(os.path.abspath(args.json))!r} does not exist")

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bidi_tts_loadtest.studies.known_latency", "--port", str(port),
                               "--ttfa-ms", str(args.ttfa_ms)])
    url = f"http://127.0.0.1:{port}"
    try:
        listening = Deadline(30.0)  # the server listens within a second or two
        while not listening.expired:
            try:
                probe.connect(url, timeout=0.2)
                break
            except probe.Unanswered:
                time.sleep(0.1)
        rows = []
        heads = ("sessions", "messages", "err p50", "err p95", "err p99", "err max")
        print(" ".join(f"{h:>8}" for h in heads), " (ms)")
        for n in args.sessions:
            row = measure(url, n, args.seconds, args.tokens_per_second)
            rows.append(row)

            def f(v: Any) -> str:
                return "-" if v is None else f"{v:8.2f}"

            print(f"{n:>8} {row['count']:>8} {f(row['p50'])} {f(row['p95'])} {f(row['p99'])} {f(row['max'])}",
                  flush=True)
        out = {"cpus": os.cpu_count(), "ttfa_ms": args.ttfa_ms, "seconds": args.seconds,
               "tokens_per_second": args.tokens_per_second, "rows": rows}
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(out, fh, indent=2)
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
