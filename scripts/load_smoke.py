"""A short headless Locust run against the embedded reference container (the CI smoke test).

    uv run python scripts/load_smoke.py [--users 2] [--run-time 20s] [--report-dir DIR] [--container-url URL]

Starts the reference container as a local process (unless --container-url is given), runs
`locust -f loadtest/locustfile.py --headless` for a few sessions with a zero-error SLO, and checks
the JSON summary: sessions and messages were measured, no errors, and time to first audio was
recorded. Exits non-zero when Locust's SLO gate or these checks fail.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bidi_tts_conformance.local_target import container_at
from bidi_tts_loadtest.core.arg_types import positive_int
from bidi_tts_loadtest.core.target import container_url_problem


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--container-url", help="a running container, e.g. http://127.0.0.1:8080 "
                        "(default: start the reference container)")
    parser.add_argument("--users", type=positive_int, default=2, help="concurrent sessions (default 2)")
    parser.add_argument("--run-time", default="20s", help="Locust --run-time (default 20s)")
    parser.add_argument("--report-dir", type=Path, default=Path("reports/load-smoke"),
                        help="summary, plots and the container log go here (default reports/load-smoke)")
    args = parser.parse_args()
    if args.container_url is not None and (problem := container_url_problem(args.container_url)):
        parser.error(problem)

    args.report_dir.mkdir(parents=True, exist_ok=True)
    summary_path = args.report_dir / "summary.json"
    with container_at(args.container_url, "load-smoke", log_path=str(args.report_dir / "container.log")) as (url, _):
        cmd = [sys.executable, "-m", "locust", "-f", "loadtest/locustfile.py", "--headless",
               "-u", str(args.users), "-r", str(args.users), "--run-time", args.run_time, "--host", str(url),
               "--turns-per-session", "1", "--summary-json", str(summary_path),
               "--report-dir", str(args.report_dir), "--slo-error-rate", "0", "--only-summary"]
        print("load-smoke: " + " ".join(cmd), flush=True)
        rc = subprocess.run(cmd, check=False).returncode
    if not summary_path.exists():
        print("load-smoke: FAILED: no summary was written", file=sys.stderr)
        return 1
    summary = json.loads(summary_path.read_text())
    print("load-smoke: " + json.dumps({k: summary.get(k) for k in
                                       ("sessions", "sessions_failed", "failures", "messages", "errors",
                                        "underruns", "ttfa_ms")}))
    problems = []
    if not summary.get("messages"):
        problems.append("no message was measured")
    if summary.get("errors"):
        problems.append(f"{summary['errors']} errors")
    if not (summary.get("ttfa_ms") or {}).get("p50"):
        problems.append("no time to first audio was recorded")
    if rc != 0:
        problems.append(f"locust exited with {rc} (SLO broken or run failed)")
    if problems:
        print("load-smoke: FAILED: " + "; ".join(problems), file=sys.stderr)
        return 1
    print("load-smoke: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
