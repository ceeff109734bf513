"""The same LLM-paced Locust load against two running containers, interleaved, side by side.

For each round and each user count (default 1, 2, 4 sessions) it runs `python -m bidi_tts_loadtest`
headless for --run-time seconds against A, then B (then B, A the next round, so neither always goes
first), and prints per container and user count: TTFA and first-audible TTFA p50/p95 (mean over the
rounds), errors, underruns (and how many frames a message came in: a container that sends a whole
message as ONE frame cannot run dry between frames, so its 0 is not a result), sessions that met the
SLO out of those judged, and audio seconds per second (Locust's `complete` rows: bytes / 48,000);
then the ratios A/B. Numbers, not pass/fail.

    python bench/sample/bench_sample_load.py --a http://127.0.0.1:8081 --a-name kokoro-cpu \\
        --b http://127.0.0.1:8080 --b-name reference [--users 1 2 4] [--run-time 40] [--rounds 2] \\
        [--slo-ttfa-p95-ms 1000] [--out DIR] [--json OUT]
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bidi_tts.exit_codes import USAGE, Parser  # noqa: E402
from bidi_tts_conformance.targets import ping_status  # noqa: E402

BYTES_PER_AUDIO_S = 48_000  # 16-bit mono PCM at 24 kHz, what both containers send


def locust_run(url: str, users: int, run_time_s: int, slo_ms: float, out: Path) -> dict[str, Any]:
    """One headless run; its summary plus the audio received per second of run time."""
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "bidi_tts_loadtest", "--headless", "-u", str(users), "-r", str(users),
               "--run-time", f"{run_time_s}s", "--host", url, "--summary-json", str(out / "summary.json"),
               "--csv", str(out / "locust"), "--slo-ttfa-p95-ms", str(slo_ms), "--slo-error-rate", "0",
               "--only-summary"]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=run_time_s + 120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - started
    summary_path = out / "summary.json"
    if not summary_path.is_file():
        raise RuntimeError(f"load run against {url} wrote no summary (exit {done.returncode}): "
                           f"{done.stderr.strip().splitlines()[-1:] or ''}")
    summary = json.loads(summary_path.read_text())
    audio_bytes = 0.0
    with open(out / "locust_stats.csv", newline="") as stats:
        for row in csv.DictReader(stats):
            if row.get("Name") == "complete":
                audio_bytes = float(row["Average Content Size"]) * int(row["Request Count"])
    summary["audio_s_per_s"] = audio_bytes / BYTES_PER_AUDIO_S / run_time_s
    summary["wall_s"] = round(wall, 1)
    summary["exit_code"] = done.returncode
    return summary


def _p(summary: dict[str, Any], key: str, pct: str) -> float | None:
    value = (summary.get(key) or {}).get(pct)
    return float(value) if value is not None else None


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    judged = sum(r["sessions_completed"] + r["sessions_failed"] for r in runs)
    frames_per_message = _mean([(r["gap_ms"]["count"] + r["messages"]) / r["messages"] if r["messages"] else None
                                for r in runs])
    return {
        "runs": len(runs),
        "ttfa_p50_ms": _mean([_p(r, "ttfa_ms", "p50") for r in runs]),
        "ttfa_p95_ms": _mean([_p(r, "ttfa_ms", "p95") for r in runs]),
        "audible_p50_ms": _mean([_p(r, "ttfa_audible_ms", "p50") for r in runs]),
        "audible_p95_ms": _mean([_p(r, "ttfa_audible_ms", "p95") for r in runs]),
        "messages": sum(r["messages"] for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "sessions_failed": sum(r["sessions_failed"] for r in runs),
        "underruns": sum(r["underruns"] for r in runs),
        "frames_per_message": frames_per_message,
        "sessions_meeting_slo": sum(r["sessions_meeting_slo"] for r in runs),
        "sessions_judged": judged,
        "audio_s_per_s": _mean([r["audio_s_per_s"] for r in runs]),
    }


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def table(names: tuple[str, str], rows: dict[str, dict[int, dict[str, Any]]], users: list[int]) -> str:
    lines = ["| container | users | TTFA p50 / p95 ms | audible p50 / p95 ms | messages | errors (failed sessions) "
             "| underruns (frames per message) | sessions at SLO | audio s/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in users:
        for name in names:
            a = rows[name][n]
            lines.append(f"| {name} | {n} | {_fmt(a['ttfa_p50_ms'])} / {_fmt(a['ttfa_p95_ms'])} | "
                         f"{_fmt(a['audible_p50_ms'])} / {_fmt(a['audible_p95_ms'])} | {a['messages']} | "
                         f"{a['errors']} ({a['sessions_failed']}) | "
                         f"{a['underruns']} ({_fmt(a['frames_per_message'], 1)}) | "
                         f"{a['sessions_meeting_slo']}/{a['sessions_judged']} | {_fmt(a['audio_s_per_s'], 2)} |")
    lines += ["", f"ratios {names[1]} / {names[0]} (below 1: {names[1]} faster):"]
    for n in users:
        a, b = rows[names[0]][n], rows[names[1]][n]
        lines.append(f"- {n} users: TTFA p50 {_ratio(b['ttfa_p50_ms'], a['ttfa_p50_ms'])}, p95 "
                     f"{_ratio(b['ttfa_p95_ms'], a['ttfa_p95_ms'])}; audible p50 "
                     f"{_ratio(b['audible_p50_ms'], a['audible_p50_ms'])}, "
                     f"p95 {_ratio(b['audible_p95_ms'], a['audible_p95_ms'])}; "
                     f"audio s/s {_ratio(b['audio_s_per_s'], a['audio_s_per_s'])}")
    return "\n".join(lines)


def main() -> int:
    parser = Parser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--a", required=True, help="first container's URL (the sample)")
    parser.add_argument("--a-name", default="A")
    parser.add_argument("--b", required=True, help="second container's URL (the reference)")
    parser.add_argument("--b-name", default="B")
    parser.add_argument("--users", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--run-time", type=int, default=40, help="seconds per short run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--slo-ttfa-p95-ms", type=float, default=1000.0)
    parser.add_argument("--out", type=Path, default=None, help="keep every run's files here")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.run_time < 5 or args.rounds < 1 or min(args.users) < 1:
        print("bench_sample_load: --run-time must be >= 5, --rounds and --users >= 1", file=sys.stderr)
        return USAGE
    targets = {args.a_name: args.a.rstrip("/"), args.b_name: args.b.rstrip("/")}
    for name, url in targets.items():
        if ping_status(url) is None:
            print(f"bench_sample_load: nothing answers at {url}/ping ({name}; start it first)", file=sys.stderr)
            return 69
    out = args.out or Path(tempfile.mkdtemp(prefix="sample-load-"))
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {name: {n: [] for n in args.users} for name in targets}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()
    for round_no in range(args.rounds):
        for n in args.users:
            order = list(targets) if round_no % 2 == 0 else list(reversed(targets))
            for name in order:
                summary = locust_run(targets[name], n, args.run_time, args.slo_ttfa_p95_ms,
                                     out / f"r{round_no}-u{n}-{name}")
                runs[name][n].append(summary)
                print(f"  round {round_no + 1} users {n} {name}: TTFA p50 {_fmt(_p(summary, 'ttfa_ms', 'p50'))} ms "
                      f"p95 {_fmt(_p(summary, 'ttfa_ms', 'p95'))} ms, {summary['messages']} messages, "
                      f"{summary['errors']} errors, {summary['underruns']} underruns, "
                      f"{summary['audio_s_per_s']:.2f} audio s/s, load {os.getloadavg()[0]:.2f}", flush=True)
    rows = {name: {n: aggregate(runs[name][n]) for n in args.users} for name in targets}
    names = (args.a_name, args.b_name)
    print(f"\n{started}, {args.rounds} rounds x {args.run_time} s, interleaved; load average before "
          f"{load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; SLO: TTFA p95 <= {args.slo_ttfa_p95_ms:.0f} ms, "
          f"no errors\n")
    print(table(names, rows, args.users))
    if args.json:
        args.json.write_text(json.dumps({"started": started, "load_before": load_before, "load_after": os.getloadavg(),
                                         "rows": {k: {str(n): v for n, v in r.items()} for k, r in rows.items()},
                                         "runs_dir": str(out)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
