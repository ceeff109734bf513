"""The suite against a container shaped like the AWS post's sample (issue 23's measurement).

Runs every case but content.* (the toys speak in tones), as the pytest plugin does (calibrated
timeouts, quiet-container probes, the plugin's case order), against tests/toys/samples.py's
AwsSampleToy (one global lock, all audio at the end, no text limit, no cancel on disconnect, cancel
answered "text required", uncoded errors, no sample_rate in synthesis_start) and a correct toy at
the same model pace. Prints wall time, the failed cases by defect, the cases not judged, and the
time ratio. Numbers, not pass/fail.

With --url it runs the suite (content.* included, unless --no-content) against a container that is
already running instead: the AWS sample's own serve.py (its model call served by int8 ONNX Kokoro) or
the reference container, one after the other on the same machine, for issue 23's before/after. It
prints the same lines, with the verdict counts.

With --sample-dir DIR --container NAME (or --reference) it starts the container itself, as a child
process on a free port (bench/sample/sample_target.py), so the cases that watch or signal the container
(stop.client.1, stop.sigterm.1) judge it; it stops the container at the end (SIGTERM, SIGKILL after
15 s; also on Ctrl-C and on errors) and prints how it ended and where its output went.

    uv run python bench/sample/bench_sample.py [--only sample|good] [--json OUT]
    uv run python bench/sample/bench_sample.py --url http://127.0.0.1:8080 --name sample [--no-content] [--json OUT]
    uv run python bench/sample/bench_sample.py --sample-dir DIR --container kokoro-cpu [--port P] [--log FILE] \
        [--no-content]
    uv run python bench/sample/bench_sample.py --reference [--port P] [--log FILE] [--no-content]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import logging
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.sample import sample_target
from bidi_tts.exit_codes import RUN_FAILED, UNREACHABLE, USAGE, Parser
from bidi_tts_conformance import selection
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import SuiteRunner
from bidi_tts_conformance.targets import Target, ping_status
from tests.toys.good import ServerThread, ToyContainer
from tests.toys.samples import AwsSampleToy, SampleLikeGoodToy

# The sample's seven defects and the cases about each (globs; a defect is caught when one of them fails).
DEFECTS: dict[str, tuple[str, ...]] = {
    "1 one global lock": ("isolation.hol.1", "isolation.slow_reader.1"),
    "2 all audio at the end": ("audio.stream.1", "post.stream.1"),
    "3 no text limit": ("robust.text.3", "errors.text_too_long.1", "robust.size.1"),
    "4 no cancel on disconnect": ("close.client.1",),
    "5 cancel answered 'text required'": ("cancel.1",),
    "6 errors carry no code": ("errors.*", "robust.*"),
    "7 no sample_rate in synthesis_start": ("audio.format.1",),
}


def _about(case_id: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(case_id, g) for g in globs)


def ordered(content: bool = False, only: tuple[str, ...] = ()) -> list:
    """The cases in the plugin's order; with `only`, those whose id matches one of its globs."""
    cases = [c for c in REGISTRY if (content or c.group != "content") and (not only or _about(c.id, only))]
    order = getattr(selection, "run_order", None)  # the plugin's order, where the suite has one
    return order(cases) if order else cases


def run(name: str, toy: ToyContainer) -> dict[str, object]:
    with ServerThread(toy.app()) as server:
        return run_url(name, server.url)


def _progress(line: str) -> None:
    print(f"  [{line}]", flush=True)


def run_url(name: str, url: str, *, content: bool = False, only: tuple[str, ...] = ()) -> dict[str, object]:
    return run_target(name, Target(kind="url", base_url=url), content=content, only=only)


def run_started(name: str, target: sample_target.ChildProcessTarget, *, content: bool = False,
                only: tuple[str, ...] = ()) -> dict[str, object]:
    """Start `target`, run the suite on it, stop it whatever happens (also Ctrl-C and SIGTERM)."""
    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        target.start(_progress)
        row = run_target(name, target, content=content, only=only)
    finally:
        target.stop()
        signal.signal(signal.SIGTERM, previous)
        print(f"  [{name}: the container {target.ended}; its output: {target.log_path}]", flush=True)
    row["stopped"] = target.ended
    row["log"] = str(target.log_path)
    return row


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # so the finally that stops the container runs


def run_target(name: str, target: Target, *, content: bool = False, only: tuple[str, ...] = ()) -> dict[str, object]:
    runner = SuiteRunner(target, Options(), progress=_progress)
    started = time.perf_counter()
    results: list[CaseResult] = []
    for case in ordered(content, only):
        results.append(result := runner.run(case))
        print(f"  {case.id:<28} {result.verdict.value:<13} {result.duration_s:6.1f} s", flush=True)
    seconds = time.perf_counter() - started
    failed = {r.case.id: r for r in results if r.verdict is Verdict.FAILED}
    caught = {d: sorted(cid for cid in failed if _about(cid, globs)) for d, globs in DEFECTS.items()}
    about = {cid for cid in failed if any(_about(cid, globs) for globs in DEFECTS.values())}
    return {
        "container": name, "seconds": round(seconds, 1), "cases": len(results),
        "verdicts": {v.value: n for v in Verdict if (n := sum(1 for r in results if r.verdict is v))},
        "failed": sorted(failed), "failed_by_defect": caught,
        "failed_about_no_defect": sorted(set(failed) - about),
        "not_judged": sorted(r.case.id for r in results if r.verdict.value not in ("OK", "FAILED", "NON-STRICT",
                                                                                    "INFORMATIONAL", "SKIPPED")),
        "busy_failures": sorted(cid for cid, r in failed.items() if "still busy" in r.detail),
        "details": {cid: r.detail[:240] for cid, r in failed.items()},
        "not_judged_details": {r.case.id: r.detail[:240] for r in results if r.verdict is Verdict.NOT_JUDGED},
        "stop_details": {r.case.id: f"{r.verdict.value}: {r.detail[:400]}" for r in results if r.case.group == "stop"},
        "slowest": [(r.case.id, round(r.duration_s, 1)) for r in sorted(results, key=lambda r: -r.duration_s)[:8]],
    }


def started_target(args: argparse.Namespace) -> sample_target.ChildProcessTarget:
    """The --sample-dir/--container or --reference container, checked but not yet started (StartError)."""
    port = sample_target.usable_port(args.port)
    if args.reference:
        command = sample_target.reference_command(port)
    else:
        command = sample_target.sample_command(args.sample_dir, args.container, port)
    name = "reference" if args.reference else args.container
    log = args.log or Path(tempfile.mkdtemp(prefix="bench-sample-")) / f"{name}.log"
    return sample_target.ChildProcessTarget(command=command, port=port, log_path=log)


def main() -> int:
    parser = Parser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", choices=("sample", "good"), default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    parser.add_argument("--url", default=None, help="run against this running container instead of the toys")
    parser.add_argument("--name", default="container", help="what to call the --url container in the output")
    parser.add_argument("--no-content", action="store_true",
                        help="with --url, --container or --reference: leave out content.* (speech)")
    parser.add_argument("--sample-dir", type=Path, default=None, help="the fetched AWS sample (repository root)")
    parser.add_argument("--container", default=None, help="start this sample container: kokoro, kokoro-cpu, "
                        "chatterbox or vllm (with --sample-dir)")
    parser.add_argument("--reference", action="store_true", help="start the reference container")
    parser.add_argument("--port", type=int, default=None, help="with --container/--reference: serve here "
                        "(default: a free port)")
    parser.add_argument("--log", type=Path, default=None, help="with --container/--reference: the container's "
                        "output goes here (default: a new temporary file, named in the output)")
    parser.add_argument("--cases", nargs="+", default=[], metavar="GLOB", help="with --url, --container or "
                        "--reference: run only the cases whose id matches (e.g. 'stop.*'), in the suite's order")
    args = parser.parse_args()
    if args.cases and not ordered(True, tuple(args.cases)):
        parser.error(f"--cases {' '.join(args.cases)} selects no case")
    logging.disable(logging.WARNING)
    started = args.reference or args.container is not None or args.sample_dir is not None
    if args.url is not None and started:
        parser.error("give one of --url, --sample-dir with --container, or --reference")
    if args.reference and (args.container is not None or args.sample_dir is not None):
        parser.error("--reference takes no --sample-dir or --container")
    if not args.reference and (args.container is None) != (args.sample_dir is None):
        parser.error("--sample-dir and --container go together")
    rows = []
    if started:
        try:
            target = started_target(args)
            rows.append(run_started(args.name if args.name != "container" else target_name(args), target,
                                    content=not args.no_content, only=tuple(args.cases)))
        except sample_target.StartError as exc:
            print(f"bench_sample: {exc}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("bench_sample: interrupted (the container was stopped)", file=sys.stderr)
            return RUN_FAILED
    if args.url is not None:
        url = args.url.rstrip("/")
        if not url.startswith(("http://", "https://")):
            print(f"bench_sample: --url {args.url!r} is not an http:// URL", file=sys.stderr)
            return USAGE
        if ping_status(url) is None:
            print(f"bench_sample: nothing answers at {url}/ping (start the container first)", file=sys.stderr)
            return UNREACHABLE
        rows.append(run_url(args.name, url, content=not args.no_content, only=tuple(args.cases)))
    toys = args.url is None and not started
    if toys and args.only in (None, "good"):
        rows.append(run("good (same pace)", SampleLikeGoodToy()))
    if toys and args.only in (None, "sample"):
        rows.append(run("sample-like", AwsSampleToy()))
    for row in rows:
        print(f"== {row['container']}: {row['seconds']} s, {row['cases']} cases, {len(row['failed'])} failed; "  # type: ignore[arg-type]
              f"verdicts {row['verdicts']}")
        if row["container"] != "good (same pace)":
            for defect, ids in row["failed_by_defect"].items():  # type: ignore[attr-defined]
                shown = ", ".join(ids[:6]) + (f" (+{len(ids) - 6} more)" if len(ids) > 6 else "")
                print(f"   defect {defect:<38} {'CAUGHT by ' + shown if ids else 'MISSED'}")
        print(f"   failed, about no defect above: {row['failed_about_no_defect']}")
        print(f"   failed for a busy container: {row['busy_failures']}")
        print(f"   not judged: {row['not_judged']}")
        print(f"   slowest cases (s): {row['slowest']}")
        if "stopped" in row:
            print(f"   at the end the container {row['stopped']}; its output: {row['log']}")
        for cid, detail in row["details"].items():  # type: ignore[attr-defined]
            print(f"     {cid}: {detail}")
        for cid, detail in row["not_judged_details"].items():  # type: ignore[attr-defined]
            print(f"     {cid} (NOT-JUDGED): {detail}")
        for cid, detail in row["stop_details"].items():  # type: ignore[attr-defined]
            print(f"   {cid}, whatever its verdict: {detail}")
    if len(rows) == 2:
        good_s, sample_s = float(rows[0]["seconds"]), float(rows[1]["seconds"])  # type: ignore[arg-type]
        print(f"time ratio sample/good: {sample_s / max(good_s, 0.1):.1f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def target_name(args: argparse.Namespace) -> str:
    return "reference" if args.reference else str(args.container)


if __name__ == "__main__":
    raise SystemExit(main())
