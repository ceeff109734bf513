"""Time to first audible audio in a real browser: the listen page in headless Chromium, both relay shapes.

``python -m loadtest.browser_ttfa --container-url URL`` starts the relay (:mod:`loadtest.relay`) on a
free loopback port, launches the system's Chromium headless through Playwright's driver (autoplay
allowed, no browser download), and speaks the same text N times in each shape, alternating raw PCM
in binary WebSocket frames and base64 PCM in server-sent events. For every message the page
measures, on its own clock: time to first byte, time to first audible sample (taken inside the
AudioWorklet and mapped to the output clock), underruns and their length. The relay reports its
share (the container's first byte; an LLM wait or a session connect when there was one), so the
first audible sample splits into container first byte + relay hop + browser decode and buffer (to
the first sample played at the output) + leading silence (the audio's own quiet start, below the
threshold).

It prints exact percentiles (:func:`bidi_tts.metrics.summarize`) and writes them with every
message's record as JSON (``--json``). Exit status: 0 when every message played, 1 when any failed,
2 for bad usage (one line on stderr, within seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bidi_tts.metrics import summarize
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.relay.app import Relay
from bidi_tts_loadtest.relay.server import RelayServer, add_upstream_options, listen, probe, upstream_from
from bidi_tts_loadtest.relay.upstream import Unreachable, UsageError

SHAPES = {"ws": "raw PCM in binary WebSocket frames", "sse": "base64 PCM in server-sent events"}
DEFAULT_TEXT = "Sure, I can help with that. Your order shipped yesterday and should arrive on Thursday."
CHROMIUM_ARGS = [
    "--autoplay-policy=no-user-gesture-required",  # the AudioContext runs without a click
    "--use-fake-ui-for-media-stream",
    "--no-first-run",
    "--mute-audio",  # render the graph but play nothing on the machine's speakers
]
STAGES = ("upstream_connect", "llm_wait", "container_first_byte", "relay", "browser_decode_buffer", "leading_silence")


class BrowserFailed(RuntimeError):
    """The browser or the page broke during the run; the message is one line."""


def find_chromium(given: str | None) -> str:
    """The Chromium executable: --chromium, $CHROMIUM, or chromium / chromium-browser on PATH."""
    for candidate in (given, os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if not candidate:
            continue
        path = shutil.which(candidate)
        if path:
            return path
        if given and candidate == given:
            raise UsageError(f"--chromium {given!r} is not an executable")
    raise UsageError("Chromium not found: install Debian's chromium (apt-get install chromium) or pass --chromium PATH")


def build_parser() -> argparse.ArgumentParser:
    parser = exit_codes.Parser(prog="python -m loadtest.browser_ttfa", description=__doc__.split("\n\n")[0])
    add_upstream_options(parser)
    parser.add_argument("--messages", type=int, default=10, help="measured messages per shape (default 10)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured messages per shape first (default 1)")
    parser.add_argument("--shapes", default="ws,sse", help="comma-separated, from: ws, sse (default both)")
    parser.add_argument("--text", default=DEFAULT_TEXT, help="what to speak each time")
    parser.add_argument("--tokens-per-second", type=float, default=None, metavar="N",
                        help="stream the text as a simulated LLM at N tokens/s, released sentence by sentence "
                        "through the chunker (default: the whole text as one message)")
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--sample-rate", type=int, default=24000)
    parser.add_argument("--prebuffer-ms", type=float, default=0.0,
                        help="audio the player holds back before it starts (default 0: play the first frame)")
    parser.add_argument("--threshold", type=float, default=0.01,
                        help="first audible sample: the first with |sample| at least this, full scale 1 (default 0.01)")
    parser.add_argument("--message-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="longest a message may take, playback included (default 60)")
    parser.add_argument("--chromium", default=None, metavar="PATH", help="the browser (default: chromium on PATH)")
    parser.add_argument("--relay-port", type=int, default=0, help="the relay's port (default: a free one)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the report here")
    parser.add_argument("--screenshot", type=Path, default=None, metavar="PNG", help="save the page at the end")
    return parser


def check_args(args: argparse.Namespace) -> list[str]:
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if not shapes or unknown:
        raise UsageError(f"--shapes takes ws and/or sse, not {args.shapes!r}")
    if args.messages < 1 or args.warmup < 0:
        raise UsageError("--messages must be at least 1 and --warmup at least 0")
    if not args.text.strip():
        raise UsageError("--text is empty")
    return shapes


def summarize_shape(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Exact percentiles of one shape's measured messages (failed ones are counted, not summarized)."""
    ok = [r for r in records if r["error"] is None and r["first_audible_ms"] is not None]
    split = {stage: summarize(r["split"][stage] for r in ok if r["split"] and r["split"][stage] is not None)
             for stage in STAGES}
    return {
        "messages": len(records),
        "failed": len(records) - len(ok),
        "errors": sorted({r["error"]["code"] for r in records if r["error"]}),
        "first_audible_ms": summarize(r["first_audible_ms"] for r in ok),
        "ttfb_ms": summarize(r["ttfb_ms"] for r in ok),
        "split_ms": split,
        "relay_forward_ms": summarize(r["relay"]["relay_forward"] for r in ok
                                      if r["relay"] and r["relay"]["relay_forward"] is not None),
        "decode_first_ms": summarize(r["decode_first_ms"] for r in ok),
        "underruns": sum(r["underruns"] for r in ok),
        "messages_with_underruns": sum(1 for r in ok if r["underruns"]),
        "underrun_ms": summarize(r["underrun_ms"] for r in ok),
        "records": records,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Everything after the checks: relay, browser, messages; returns the report."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    shapes = check_args(args)
    upstream = upstream_from(args)
    chromium = find_chromium(args.chromium)
    sock = listen("127.0.0.1", args.relay_port)
    probe(upstream)
    options = {"text": args.text, "voice": args.voice, "sampleRate": args.sample_rate, "prebufferMs": args.prebuffer_ms,
               "threshold": args.threshold, "tokensPerSecond": args.tokens_per_second,
               "timeoutMs": args.message_timeout * 1000}
    records: dict[str, list[dict[str, Any]]] = {s: [] for s in shapes}
    with RelayServer(Relay(upstream, message_timeout_s=args.message_timeout), sock) as relay, sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS, timeout=30_000)
        except PlaywrightError as exc:
            raise UsageError(f"cannot start {chromium}: {str(exc).splitlines()[0]}") from None
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 560})
            page.set_default_timeout((args.message_timeout + 10) * 1000)
            page.goto(relay.url + "/")
            for index in range(args.warmup + args.messages):
                for shape in shapes:  # alternate, so a drift in the container hits both shapes alike
                    record = page.evaluate("(o) => window.listen.speak(o)", {**options, "shape": shape})
                    if index >= args.warmup:
                        records[shape].append(record)
            if args.screenshot is not None:
                args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.screenshot), full_page=True)
            version = browser.version
        except PlaywrightError as exc:
            raise BrowserFailed(f"the browser failed: {str(exc).splitlines()[0]}") from None
        finally:
            browser.close()
    return {
        "upstream": upstream.describe(),
        "browser": f"Chromium {version} (headless, {chromium})",
        "text": args.text,
        "tokens_per_second": args.tokens_per_second,
        "prebuffer_ms": args.prebuffer_ms,
        "threshold": args.threshold,
        "warmup": args.warmup,
        "shapes": {shape: {"what": SHAPES[shape], **summarize_shape(records[shape])} for shape in shapes},
    }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:8.1f}"


def print_report(report: dict[str, Any]) -> None:
    print(f"time to first audible audio in {report['browser']}, upstream {report['upstream']}")
    columns = ("p50", "p90", "p95", "p99", "max")
    for shape, result in report["shapes"].items():
        print(f"\n{shape}: {result['what']}: {result['messages']} messages, {result['failed']} failed"
              + (f" ({', '.join(result['errors'])})" if result["errors"] else "")
              + f", {result['underruns']} underruns in {result['messages_with_underruns']} messages")
        print(f"  {'ms':<28}" + "".join(f"{c:>9}" for c in columns))
        rows = [("first audible sample", result["first_audible_ms"]), ("first byte in the browser", result["ttfb_ms"])]
        rows += [(f"  {stage.replace('_', ' ')}", result["split_ms"][stage]) for stage in STAGES
                 if result["split_ms"][stage]["count"] and (result["split_ms"][stage]["max"] or 0) > 0.5]
        rows.append(("underrun length", result["underrun_ms"]))
        for name, stats in rows:
            print(f"  {name:<28}" + "".join(f" {_fmt(stats[c])}" for c in columns))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    began = time.monotonic()
    try:
        report = run(args)
    except UsageError as exc:
        print(f"browser_ttfa: {exc}", file=sys.stderr)
        return exit_codes.UNREACHABLE if isinstance(exc, Unreachable) else exit_codes.USAGE
    except BrowserFailed as exc:
        print(f"browser_ttfa: {exc}", file=sys.stderr)
        return exit_codes.RUN_FAILED
    report["wall_s"] = time.monotonic() - began
    print_report(report)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"\nreport: {args.json}")
    return exit_codes.BROKEN if any(r["failed"] for r in report["shapes"].values()) else exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
