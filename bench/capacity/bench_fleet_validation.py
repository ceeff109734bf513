"""The fleet simulation's instance model against a real container on this machine (prints numbers).

A timed-backend container (fifo, one worker, whole messages; a profile of known cost written here) is
measured under a closed-loop ladder; the model built from it predicts the p95 TTFA of Poisson arrivals
at a few fractions of its capacity, which are then measured. The issue's bar: within 25%.

    PYTHONPATH=$PWD python bench/capacity/bench_fleet_validation.py [--service-ms 50] [--cv 0.3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bidi_tts.local_container import LocalContainer
from bidi_tts_loadtest.fleet.validate import validate


def profile(service_ms: float, cv: float) -> dict:
    return {"name": f"fleet-validation-{service_ms:g}ms", "description": "a timed profile of known cost",
            "source": "written by bench/capacity/bench_fleet_validation.py", "tokens_per_char": 1.0,
            "g2p_fixed_ms": 0.0, "g2p_per_char_ms": 0.0, "call_fixed_ms": service_ms, "call_per_token_ms": 0.0,
            "audio_s_per_token": 0.002, "throughput_by_concurrency": {"1": 1.0}, "call_cv": cv}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--service-ms", type=float, default=50.0)
    p.add_argument("--cv", type=float, default=0.3)
    p.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--rates", type=float, nargs="+", default=[0.5, 0.7, 0.85], help="fractions of capacity")
    p.add_argument("--closed-s", type=float, default=15.0)
    p.add_argument("--open-s", type=float, default=40.0)
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        prof = Path(tmp) / "profile.json"
        prof.write_text(json.dumps(profile(a.service_ms, a.cv)))
        box = LocalContainer(args=["--backend", "timed", "--timed-profile", str(prof), "--scheduler", "fifo",
                                   "--synth-workers", "1", "--first-clause-chars", "0", "--max-queue", "100000",
                                   "--log-level", "warning"])
        try:
            if not box.wait_ready(60).ready:
                print("the container did not become ready", file=sys.stderr)
                return 69
            started = time.monotonic()
            ladder, comparisons = validate(box.url, a.levels, a.rates, a.closed_s, a.open_s)
        finally:
            box.stop()
    load = os.getloadavg()[0]
    print(f"timed container, fifo, 1 worker, whole messages, service {a.service_ms:g} ms cv {a.cv:g}; "
          f"{time.monotonic() - started:.0f} s, load average {load:.1f}")
    print(" closed  clients   rps     p50_ms   p95_ms")
    for r in ladder:
        print(f"         {r.level:>5.0f} {r.achieved_rps:>7.2f} {r.quantile(50):>9.1f} {r.quantile(95):>8.1f}")
    print(" open    rate_rps  n   measured_p95  predicted_p95  error")
    for c in comparisons:
        print(f"         {c.rate:>7.2f} {c.measured_n:>4} {c.measured_p95_ms:>11.1f} {c.predicted_p95_ms:>13.1f} "
              f"{c.error:>+7.1%}")
    if a.json:
        a.json.write_text(json.dumps({
            "service_ms": a.service_ms, "cv": a.cv, "load_average": load,
            "closed": [{"clients": r.level, "rps": r.achieved_rps, "p50_ms": r.quantile(50),
                        "p95_ms": r.quantile(95)} for r in ladder],
            "open": [{"rate": c.rate, "n": c.measured_n, "measured_p95_ms": c.measured_p95_ms,
                      "predicted_p95_ms": c.predicted_p95_ms, "error": c.error} for c in comparisons]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
