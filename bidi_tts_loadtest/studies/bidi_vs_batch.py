"""Bidi vs batch: time to first audio when sentences stream as the LLM writes them, or not.

A simulated LLM answers (first token after ``--first-token-ms``, then ``--tokens-per-second``).
*bidi*: each sentence goes out on the open WebSocket session the moment the chunker releases it.
*batch*: the whole answer goes out as one message after its last token. The time to first audio
is measured from the start of the answer (the LLM's first moment) to the first AUDIO frame, on
the same session for both modes, alternating which mode goes first, over several trials.

    uv run python -m loadtest.bidi_vs_batch --container-url URL --tokens-per-second N --json OUT
    uv run python -m loadtest.bidi_vs_batch --endpoint-name NAME [--region R --endpoint-url URL
        --endpoint-ca ca.pem] --tokens-per-second N --json OUT
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bidi_tts.session import ClientSession
from bidi_tts.transports.base import ConnectError, TransportError
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.core.arg_types import non_negative_float, positive_float, positive_int
from bidi_tts_loadtest.core.corpus import load_answers
from bidi_tts_loadtest.core.preflight import target_unreachable
from bidi_tts_loadtest.core.target import add_target_arguments, open_sync_transport, target_problem
from bidi_tts_loadtest.core.turn import SyncTransport, TurnConfig, run_turn


def _turn_ttfa_ms(transport: SyncTransport, session: ClientSession, answer: str,
                  config: TurnConfig) -> float:
    result = run_turn(transport, session, answer, config)
    if result.failure or result.errors or result.turn_ttfa_s is None:
        raise RuntimeError(f"{config.mode} turn failed: {result.failure or 'error frame'}")
    return result.turn_ttfa_s * 1000


def run_trials(target: str | Any, *, tokens_per_second: float, first_token_ms: float, trials: int,
               voice: str = "af_heart", timeout_s: float = 120.0) -> dict[str, Any]:
    """Run the experiment; the JSON-able result. `target` is a container URL or parsed options
    naming one (``container_url``) or a SageMaker endpoint (``endpoint_name``, ...)."""
    options = argparse.Namespace(container_url=target, endpoint_name=None) if isinstance(target, str) else target
    answers = load_answers()
    rows: list[dict[str, Any]] = []
    transport = open_sync_transport(options, options.container_url)
    session = ClientSession()
    try:
        for i in range(trials):
            answer = answers[i % len(answers)]
            common = {"tokens_per_second": tokens_per_second, "first_token_delay_s": first_token_ms / 1000,
                      "voice": voice, "message_timeout_s": timeout_s}
            order = ("bidi", "batch") if i % 2 == 0 else ("batch", "bidi")
            row: dict[str, Any] = {"trial": i, "answer_chars": len(answer), "order": list(order)}
            for mode in order:
                row[f"ttfa_{mode}_ms"] = _turn_ttfa_ms(transport, session, answer,
                                                       TurnConfig(mode=mode, **common))  # type: ignore[arg-type]
            row["ratio"] = row["ttfa_batch_ms"] / row["ttfa_bidi_ms"]
            rows.append(row)
        transport.send(session.close())
        transport.wait_closed(10.0)
    finally:
        try:
            transport.close()
        except TransportError:
            pass
    bidi = statistics.median(r["ttfa_bidi_ms"] for r in rows)
    batch = statistics.median(r["ttfa_batch_ms"] for r in rows)
    return {
        "container_url": options.container_url,
        "endpoint_name": options.endpoint_name,
        "tokens_per_second": tokens_per_second,
        "first_token_ms": first_token_ms,
        "ttfa_bidi_ms": bidi,
        "ttfa_batch_ms": batch,
        "ratio": batch / bidi,
        "statistic": "median over trials; ttfa from the LLM's start to the first audio frame",
        "trials": rows,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = exit_codes.Parser(prog="python -m loadtest.bidi_vs_batch", description=__doc__.splitlines()[0])
    target = parser.add_argument_group("target (one of --container-url, --endpoint-name)")
    target.add_argument("--container-url", default=None, help="container base URL, e.g. http://127.0.0.1:8080")
    add_target_arguments(target)
    parser.add_argument("--tokens-per-second", type=positive_float, default=40.0,
                        help="simulated LLM token rate (default 40)")
    parser.add_argument("--first-token-ms", type=non_negative_float, default=200.0,
                        help="simulated LLM delay before its first token (default 200)")
    parser.add_argument("--trials", type=positive_int, default=6,
                        help="answers tried, each in both modes, alternating which goes first (default 6)")
    parser.add_argument("--voice", default="af_heart", help="voice of every message (default af_heart)")
    parser.add_argument("--json", default=None, help="write the result here")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.container_url and args.endpoint_name:
        parser.error("give --container-url or --endpoint-name, not both")
    problem = target_problem(args, args.container_url)
    if problem is not None:
        parser.error(problem.replace("--host http://HOST:PORT", "--container-url http://HOST:PORT"))
    dead = target_unreachable(args, args.container_url)
    if dead is not None:
        print(f"bidi_vs_batch: {dead}", file=sys.stderr)
        return exit_codes.UNREACHABLE
    try:
        out = run_trials(args, tokens_per_second=args.tokens_per_second,
                         first_token_ms=args.first_token_ms, trials=args.trials, voice=args.voice)
    except ConnectError as exc:
        print(f"bidi_vs_batch: {exc}", file=sys.stderr)
        return exit_codes.UNREACHABLE
    except (TransportError, RuntimeError) as exc:
        print(f"bidi_vs_batch: {exc}", file=sys.stderr)
        return exit_codes.RUN_FAILED
    print(f"{'trial':>5} {'chars':>6} {'bidi ms':>9} {'batch ms':>9} {'ratio':>6}")
    for r in out["trials"]:
        print(f"{r['trial']:>5} {r['answer_chars']:>6} {r['ttfa_bidi_ms']:9.1f} {r['ttfa_batch_ms']:9.1f} "
              f"{r['ratio']:6.2f}")
    print(f"median: bidi {out['ttfa_bidi_ms']:.1f} ms, batch {out['ttfa_batch_ms']:.1f} ms, "
          f"batch/bidi {out['ratio']:.2f}x at {args.tokens_per_second:g} tokens/s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
