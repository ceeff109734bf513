"""Check the planner's open-loop prediction against a measurement: one local timed container.

    PYTHONPATH=. python bench/capacity/bench_plan_open_loop.py [--profile h200-eager] [--slo-ms 400]
        [--levels 1 2 4 8 12] [--closed-s 8] [--open-s 20] [--loads 0.5 0.7 0.85] [--json OUT]

1. Closed loop (what the ladder measures): N clients POST /invocations back to back, for each N;
   rps and time to first byte (TTFA) p50/p95 per level make the planner's curve.
2. The planner's model (bidi_tts_loadtest.plan.model) predicts, from that curve alone, the p95 TTFA
   and the mean number in system under Poisson arrivals at the given shares of saturation, and lambda*.
3. Open loop: Poisson arrivals at those rates, measured the same way.

The container is the reference container's timed backend (a profile's predicted times; it sleeps, so
the measurement does not compete with the client for the 2 cores): a measurement of a real server
process and its scheduler, not of Kokoro. One worker (--synth-workers 1), --max-queue 1000.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bidi_tts.fleet_plan import Curve, Rung
from bidi_tts.local_container import LocalContainer
from bidi_tts_loadtest.plan.model import lambda_star, latency_p95_ms, occupancy

TEXT = "Your table is ready now."  # 24 characters, about the sample's 25.2


def one_request(port: int) -> tuple[float, float]:
    """(TTFA s, complete s) of one POST /invocations on a fresh connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    try:
        conn.request("POST", "/invocations", body=json.dumps({"text": TEXT}),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        first = response.read1(65536) if response.status == 200 else b""
        ttfa = time.perf_counter() - started
        if not first:
            raise RuntimeError(f"answer {response.status}")
        while response.read1(65536):
            pass
        return ttfa, time.perf_counter() - started
    finally:
        conn.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def closed_level(port: int, n: int, seconds: float, warmup: float = 1.0) -> dict[str, float]:
    start = time.perf_counter()
    end = start + warmup + seconds
    ttfas: list[float] = []
    done = [0]
    lock = threading.Lock()

    def client() -> None:
        while time.perf_counter() < end:
            sent = time.perf_counter()
            ttfa, _ = one_request(port)
            if sent >= start + warmup:
                with lock:
                    ttfas.append(ttfa * 1000)
                    done[0] += 1

    threads = [threading.Thread(target=client, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 60)
    wall = time.perf_counter() - start - warmup
    return {"level": n, "rps": done[0] / wall, "p50": pct(ttfas, 0.5), "p95": pct(ttfas, 0.95), "n": len(ttfas)}


def open_rate(port: int, lam: float, seconds: float, seed: int, warmup: float = 3.0) -> dict[str, float]:
    rng = random.Random(seed)
    ttfas: list[float] = []
    in_flight = [0]
    samples: list[int] = []
    lock = threading.Lock()
    threads: list[threading.Thread] = []
    start = time.perf_counter()

    def request(measured: bool) -> None:
        with lock:
            in_flight[0] += 1
        try:
            ttfa, _ = one_request(port)
        finally:
            with lock:
                in_flight[0] -= 1
        if measured:
            with lock:
                ttfas.append(ttfa * 1000)

    at = start
    while at < start + warmup + seconds:
        at += rng.expovariate(lam)
        while (now := time.perf_counter()) < at:
            time.sleep(min(at - now, 0.02))
            if now >= start + warmup:
                with lock:
                    samples.append(in_flight[0])
        t = threading.Thread(target=request, args=(at >= start + warmup,), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout=60)
    return {"lam": lam, "p95": pct(ttfas, 0.95), "p50": pct(ttfas, 0.5), "n": len(ttfas),
            "in_flight_mean": statistics.fmean(samples) if samples else 0.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--profile", default="h200-eager")
    p.add_argument("--slo-ms", type=float, default=400.0)
    p.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4, 8, 12])
    p.add_argument("--closed-s", type=float, default=8.0)
    p.add_argument("--open-s", type=float, default=20.0)
    p.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.7, 0.85])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    container = LocalContainer(args=["--backend", "timed", "--timed-profile", args.profile, "--synth-workers", "1",
                                     "--max-queue", "1000", "--first-clause-chars", "0", "--log-level", "warning"])
    try:
        if container.wait_ready(60).outcome != "ready":
            print("the timed container did not become ready", file=sys.stderr)
            return 70
        one_request(container.port)  # warm
        print(f"closed loop, {args.closed_s:g} s a level ({TEXT!r}, {args.profile}, one worker):")
        rungs = []
        for n in args.levels:
            row = closed_level(container.port, n, args.closed_s)
            rungs.append(row)
            print(f"  N={n:<3} {row['rps']:6.2f} rps  TTFA p50 {row['p50']:7.1f}  p95 {row['p95']:7.1f} ms"
                  f"  ({row['n']})")
        curve = Curve([Rung(r["level"], r["rps"], r["p50"], r["p95"]) for r in rungs])
        star = lambda_star(curve, args.slo_ms)
        print(f"model: saturation {curve.saturation_rps:.2f} rps, lambda* at p95 <= {args.slo_ms:g} ms = "
              f"{star:.2f} rps")
        print("open loop (Poisson), model against measurement:")
        rows: list[dict[str, Any]] = []
        # the shares asked for, and lambda* itself: the measured p95 there says whether the plan is safe
        for share in sorted({*args.loads, star / curve.saturation_rps}):
            lam = share * curve.saturation_rps
            occ = occupancy(curve, lam)
            predicted = latency_p95_ms(curve, occ)
            got = open_rate(container.port, lam, args.open_s, args.seed)
            row = {"share": share, "lam": lam, "predicted_p95_ms": predicted, "measured_p95_ms": got["p95"],
                   "ratio": predicted / got["p95"], "predicted_L": occ.mean_in_system,
                   "measured_L": got["in_flight_mean"], "n": got["n"]}
            rows.append(row)
            print(f"  {share:.2f} x sat = {lam:6.2f} rps: p95 predicted {predicted:7.1f}  measured "
                  f"{got['p95']:7.1f} ms (ratio {row['ratio']:.2f}); in system predicted "
                  f"{occ.mean_in_system:5.2f}  measured "
                  f"{got['in_flight_mean']:5.2f}  ({got['n']} requests)")
        if args.json:
            args.json.write_text(json.dumps({"closed": rungs, "lambda_star": star, "open": rows}, indent=2))
    finally:
        container.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
