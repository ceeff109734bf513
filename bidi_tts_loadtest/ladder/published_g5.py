"""The AWS sample's published ml.g5.xlarge ladder, transcribed, and a ladder of ours set beside it.

Source: aws-samples/sample-kokoro-tts-for-ai-agents,
``packages/speech-infra/artifacts/qmax-kokoro-82m-response-stream-g5xlarge-8b1b96bc.json`` (run
b8fa8ef48043, measured 2026-08-04): Kokoro-82M in the sample's GPU container on one ml.g5.xlarge, a
closed loop of N clients through InvokeEndpointWithResponseStream, 240 s a rung with the last 60 s
measured, 25.2 characters a request, autoscaling frozen, no queue bound. These are the numbers the
``g5-xlarge`` timed profile was fitted to (its ``source`` says how), and what a ladder against it is
checked against: the p95 per rung within 25% and the saturation throughput.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SOURCE = ("aws-samples/sample-kokoro-tts-for-ai-agents packages/speech-infra/artifacts/"
          "qmax-kokoro-82m-response-stream-g5xlarge-8b1b96bc.json (run b8fa8ef48043, 2026-08-04)")
CHARS_PER_REQUEST = 25.22
SLO_MS = 3000.0
Q_MAX = 50


@dataclass(frozen=True, slots=True)
class PublishedRung:
    clients: int
    achieved_rps: float
    ttfa_p50_ms: float
    ttfa_p95_ms: float


RUNGS = (
    PublishedRung(1, 16.08, 60.02, 65.37),
    PublishedRung(5, 17.90, 278.02, 286.17),
    PublishedRung(10, 17.92, 554.92, 568.49),
    PublishedRung(20, 17.92, 1112.12, 1129.32),
    PublishedRung(30, 17.90, 1674.18, 1689.80),
    PublishedRung(40, 17.88, 2235.28, 2245.00),
    PublishedRung(50, 17.87, 2793.50, 2805.66),
    PublishedRung(60, 17.90, 3353.92, 3374.78),
)
SATURATION_RPS = 17.9  # every rung from N=5 up


@dataclass(frozen=True, slots=True)
class RungComparison:
    clients: int
    published_p95_ms: float
    simulated_p95_ms: float
    published_rps: float
    simulated_rps: float

    @property
    def p95_ratio(self) -> float:
        return self.simulated_p95_ms / self.published_p95_ms

    @property
    def rps_ratio(self) -> float:
        return self.simulated_rps / self.published_rps


def compare(ladder: dict[str, Any]) -> list[RungComparison]:
    """Our closed-loop request ladder's usable rungs beside the published ones at the same N."""
    published = {r.clients: r for r in RUNGS}
    rows = []
    for r in ladder["rungs"]:
        p = published.get(int(r["level"]))
        if p is None or not r.get("usable") or r["ttfa_ms"].get("p95") is None:
            continue
        rows.append(RungComparison(p.clients, p.ttfa_p95_ms, float(r["ttfa_ms"]["p95"]), p.achieved_rps,
                                   float(r["achieved_rps"])))
    return rows


def table(rows: list[RungComparison]) -> str:
    lines = ["| N | published p95 (ms) | simulated p95 (ms) | ratio | published rps | simulated rps | ratio |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {c.clients} | {c.published_p95_ms:.0f} | {c.simulated_p95_ms:.0f} | {c.p95_ratio:.2f} | "
              f"{c.published_rps:.2f} | {c.simulated_rps:.2f} | {c.rps_ratio:.2f} |" for c in rows]
    return "\n".join(lines)
