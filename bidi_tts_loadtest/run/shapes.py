"""Load shapes: steady N sessions, a linear ramp, and a capacity sweep that stops when the SLO breaks.

Selected with ``--shape`` (the locustfile defines no shape class of its own, so plain
``-u/-r/--run-time`` runs keep Locust's usual behaviour). One user is one concurrent session.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from locust import LoadTestShape

from bidi_tts_loadtest.run.slo import Slo
from bidi_tts_loadtest.run.summary import build_summary

log = logging.getLogger("loadtest")


class SteadyShape(LoadTestShape):
    """`users` sessions, spawned at once, held for `hold_s` seconds."""

    def __init__(self, users: int, hold_s: float) -> None:
        super().__init__()
        self.users, self.hold_s = users, hold_s

    def tick(self) -> tuple[int, float] | None:
        return None if self.get_run_time() >= self.hold_s else (self.users, float(self.users))


class RampShape(LoadTestShape):
    """From `start` to `end` sessions linearly over `ramp_s`, then held for `hold_s`."""

    def __init__(self, start: int, end: int, ramp_s: float, hold_s: float) -> None:
        super().__init__()
        self.start, self.end, self.ramp_s, self.hold_s = start, end, ramp_s, hold_s

    def tick(self) -> tuple[int, float] | None:
        t = self.get_run_time()
        if t >= self.ramp_s + self.hold_s:
            return None
        frac = min(1.0, t / self.ramp_s) if self.ramp_s > 0 else 1.0
        users = round(self.start + (self.end - self.start) * frac)
        return max(1, users), max(1.0, abs(self.end - self.start) / max(self.ramp_s, 1e-9))


class CapacitySweepShape(LoadTestShape):
    """Steps of concurrency (start, start+step, ... max); stops at the first step that breaks the SLO.

    Each step runs `step_s` seconds; its first `warmup_s` are not judged. A step is judged on the
    samples taken inside its window, once `lag_s` has passed after it (a master waits for the
    workers' periodic reports). The answer: the largest concurrency whose step met every SLO.
    """

    def __init__(self, recorder: Any, slo: Slo, start: int, step: int, max_users: int,
                 step_s: float, warmup_s: float, lag_s: float = 0.0) -> None:
        super().__init__()
        if not slo.any_set:
            raise ValueError("a capacity sweep needs at least one --slo-* option")
        self.recorder, self.slo = recorder, slo
        self.levels = list(range(start, max_users + 1, max(1, step))) or [start]
        self.step_s, self.warmup_s, self.lag_s = step_s, min(warmup_s, step_s / 2), lag_s
        self.steps: list[dict[str, Any]] = []  # one verdict per judged step
        self._wall0: float | None = None
        self._broken = False

    def reset_time(self) -> None:
        super().reset_time()
        self._wall0 = time.time()

    def _judge(self, index: int) -> None:
        assert self._wall0 is not None
        since = self._wall0 + index * self.step_s + self.warmup_s
        until = self._wall0 + (index + 1) * self.step_s
        summary = build_summary(self.recorder, self.slo, since=since, until=until)
        verdict = {
            "users": self.levels[index],
            "messages": summary["messages"],
            "ttfa_p95_ms": summary["ttfa_ms"]["p95"],
            "ttfa_p99_ms": summary["ttfa_ms"]["p99"],
            "complete_p95_ms": summary["complete_ms"]["p95"],
            "error_rate": summary["error_rate"],
            "underruns": summary["underruns"],
            "passed": summary["slo_passed"],
            "broken": summary["slo_broken"],
        }
        self.steps.append(verdict)
        log.info("sweep: %d sessions -> %s", verdict["users"], "meets the SLO" if verdict["passed"]
                 else "breaks the SLO: " + "; ".join(verdict["broken"]))
        if not verdict["passed"]:
            self._broken = True

    def tick(self) -> tuple[int, float] | None:
        if self._wall0 is None:
            self._wall0 = time.time()
        t = self.get_run_time()
        while len(self.steps) < len(self.levels) and t >= (len(self.steps) + 1) * self.step_s + self.lag_s:
            self._judge(len(self.steps))
        if self._broken or len(self.steps) == len(self.levels):
            return None
        index = min(int(t // self.step_s), len(self.levels) - 1)
        users = self.levels[index]
        return users, float(max(users, 1))

    def result(self) -> dict[str, Any]:
        """The sweep's answer, for the summary and the plot."""
        passed = [s["users"] for s in self.steps if s["passed"]]
        # Capacity is the last level before the first failure (a later pass would be noise).
        holds = 0
        for s in self.steps:
            if not s["passed"]:
                break
            holds = s["users"]
        limit = self.slo.ttfa_p95_ms
        sentence = (f"holds {holds} sessions at p95 TTFA under {limit:g} ms" if limit is not None
                    else f"holds {holds} sessions within the SLO")
        return {"holds_sessions": holds, "sentence": sentence, "steps": self.steps,
                "levels_passed": passed, "slo": self.slo.as_dict()}


def build_shape(options: Any, state: Any) -> LoadTestShape | None:
    """The shape `--shape` asks for (None: Locust's own -u/-r/--run-time)."""
    kind = getattr(options, "shape", "none")
    if kind == "steady":
        return SteadyShape(options.shape_users, options.shape_step_s)
    if kind == "ramp":
        return RampShape(options.shape_start_users, options.shape_users, options.shape_ramp_s,
                         options.shape_step_s)
    if kind == "sweep":
        from locust import runners

        # A master judges a step only after the workers' next periodic report has come in.
        lag = float(runners.WORKER_REPORT_INTERVAL) + 0.5 if getattr(options, "master", False) else 0.0
        shape = CapacitySweepShape(state.recorder, Slo.from_options(options), options.shape_start_users,
                                   options.shape_step_users, options.shape_max_users, options.shape_step_s,
                                   options.shape_warmup_s, lag_s=lag)
        state.sweep = shape
        return shape
    if kind not in ("none", None):
        raise ValueError(f"unknown --shape {kind!r}")
    return None
