"""The `g5-xlarge` timed profile under the sample's own ladder, beside the sample's published figures.

    uv run python bench/capacity/bench_g5_ladder.py --hold-s 60 --measure-s 40 --json g5-ladder.json

A simulation checked against a measurement: the timed backend configured like the AWS sample's container
(``fifo/1x1/whole``: one request at a time, whole messages) takes the closed-loop request ladder at the
sample's rungs (N = 1, 5, 10, ..., 60 clients, ~25-character texts) and each rung's p95 time to first
audio and throughput are set beside the sample's ml.g5.xlarge measurements
(:mod:`bidi_tts_loadtest.ladder.published_g5`). Goal: p95 within 25% at every rung, saturation throughput
within 10%. The edge's round trip is not added (the profile's ``source`` says why).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bidi_tts_loadtest.ladder import cli as ladder
from bidi_tts_loadtest.ladder import published_g5


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="g5-xlarge", help="timed profile (default g5-xlarge)")
    p.add_argument("--hold-s", type=float, default=60.0)
    p.add_argument("--measure-s", type=float, default=40.0)
    p.add_argument("--levels", type=int, nargs="+", default=[r.clients for r in published_g5.RUNGS])
    p.add_argument("--json", type=Path, default=None, help="also keep the ladder JSON here")
    args = p.parse_args(argv)
    if not 0 < args.measure_s <= args.hold_s:
        print("bench_g5_ladder: --measure-s must be positive and at most --hold-s", file=sys.stderr)
        return 4
    out = args.json or Path(tempfile.mkdtemp(prefix="g5-ladder-")) / "ladder.json"
    rc = ladder.main(["--timed-profile", args.profile, "--config", "fifo/1x1/whole", "--load", "request",
                      "--loop", "closed", "--levels", *map(str, args.levels), "--hold-s", str(args.hold_s),
                      "--measure-s", str(args.measure_s), "--drain-s", "5", "--idle-s", "1",
                      "--slo-ms", str(published_g5.SLO_MS), "--stop-after-fails", "0", "--json", str(out)])
    if rc not in (0, 1):
        return rc
    result = json.loads(out.read_text())
    rows = published_g5.compare(result)
    print(f"\nsimulation (timed backend, profile {args.profile}) against {published_g5.SOURCE}:\n")
    print(published_g5.table(rows))
    sat = result["result"]["saturation_rps"]
    print(f"\nsaturation: simulated {sat:.2f} rps against {published_g5.SATURATION_RPS} published "
          f"({sat / published_g5.SATURATION_RPS:.2f}x); Q_max at {published_g5.SLO_MS:.0f} ms: simulated "
          f"{result['result']['q_max']} (bracketed: {result['result']['bracketed']}) against {published_g5.Q_MAX}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
