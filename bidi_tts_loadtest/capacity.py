"""Capacity of the reference container per scheduler and worker layout, side by side, in one run.

    uv run python -m loadtest.capacity --schedulers fifo round-robin deadline --layouts 1x2 2x1 \\
        --sessions 1 2 3 4 --seconds 40 --slo-ttfa-ms 2000 --json capacity.json

Starts one container per (scheduler, layout) (`WxT`: W synthesis workers with T onnxruntime
threads each), all loaded at once, then measures them interleaved: for each session count, every
container in turn (the order rotates per step) takes the same LLM-paced load, so a burst of noise
from the machine's other tenants is spread across all configurations instead of sinking one.

The load: each session speaks conversation turns (``loadtest.turn``, the chunker releasing each
sentence as the simulated LLM streams it); the next turn starts when the listener would have heard
the previous one to the end, plus a pause. Per turn: TTFA from the LLM's first token to the first
audio frame, and underruns of a player that plays the whole turn from its first frame (all its
messages back to back; a stall over 50 ms counts). A configuration *holds* n sessions when, at n,
p95 TTFA is under the SLO and no turn underran. The 1-minute load average is recorded beside every
step: on a shared machine the numbers mean little without it.

Beside the latency table, two more, per configuration and session count:
- *decisions*: from the container's scheduler (``SCHEDULER_STATS_FILE``): picks, the share of picks
  where more than one session had a unit waiting (only there can the order matter), the share where
  the policy took another session than round-robin would have, and the queue depth at pick time;
- *demand against capacity*: the audio seconds per wall second that n LLM-paced listeners consume
  (each hears a turn of A seconds, then pauses, then waits TTFA for the next: n·A/(TTFA+A+pause)),
  at TTFA 0 and at the SLO, against what the container produced, how busy its workers were, and
  what it makes while busy (audio seconds per synthesis second, times the workers). When demand at
  the SLO exceeds the capacity while busy, no order of the work can hold n sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bidi_tts.metrics import percentile, playback_time, playback_underruns
from bidi_tts.protocol import DEFAULT_SAMPLE_RATE
from bidi_tts.session import ClientSession
from bidi_tts.transports.base import TransportError
from bidi_tts.transports.websocket_sync import SyncWebSocketTransport
from bidi_tts_loadtest import exit_codes
from bidi_tts_loadtest.corpus import load_answers
from bidi_tts_loadtest.turn import TurnConfig, TurnResult, run_turn

UNDERRUN_TOLERANCE_S = 0.05
BYTES_PER_S = 2 * DEFAULT_SAMPLE_RATE


@dataclass(slots=True)
class TurnSample:
    ttfa_s: float | None
    underruns: int
    audio_s: float
    errors: int
    ttfa_audible_s: float | None = None  # to the first sample at -40 dBFS, as a player hears it


SCHED_KEYS = ("picks", "contested", "differed", "depth_sum", "audio_s", "synth_s")


def sched_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The scheduler's counts during one step (its file holds running totals); {} when unknown."""
    if not after:
        return {}
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in SCHED_KEYS}
    delta["workers"] = after.get("workers", 1)
    # A running maximum: it is this step's when it grew during the step, else an upper bound of it.
    delta["depth_max"] = after.get("depth_max", 0)
    delta["depth_max_grew"] = float(after.get("depth_max", 0) > before.get("depth_max", 0))
    return delta


def listener_demand(sessions: int, turn_audio_s: float, pause_s: float, ttfa_s: float) -> float:
    """Audio seconds per wall second that `sessions` LLM-paced listeners consume: each turn of
    `turn_audio_s` seconds is heard after `ttfa_s`, then the listener pauses `pause_s`."""
    cycle = ttfa_s + turn_audio_s + pause_s
    return sessions * turn_audio_s / cycle if cycle > 0 else 0.0


@dataclass(slots=True)
class StepResult:
    """One configuration at one session count."""

    config: str
    sessions: int
    wall_s: float
    turns: list[TurnSample] = field(default_factory=list)
    load_before: float = 0.0
    load_after: float = 0.0
    sched: dict[str, float] = field(default_factory=dict)  # sched_delta over the step
    pause_s: float = 1.0

    def ttfa_ms(self, q: float) -> float | None:
        values = [t.ttfa_s * 1000 for t in self.turns if t.ttfa_s is not None]
        return percentile(values, q) if values else None

    def ttfa_audible_ms(self, q: float) -> float | None:
        values = [t.ttfa_audible_s * 1000 for t in self.turns if t.ttfa_audible_s is not None]
        return percentile(values, q) if values else None

    @property
    def underruns(self) -> int:
        return sum(t.underruns for t in self.turns)

    @property
    def errors(self) -> int:
        return sum(t.errors for t in self.turns)

    @property
    def audio_per_wall_s(self) -> float:
        return sum(t.audio_s for t in self.turns) / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def turn_audio_s(self) -> float:
        """Mean audio seconds per turn that produced audio."""
        audio = [t.audio_s for t in self.turns if t.audio_s > 0]
        return sum(audio) / len(audio) if audio else 0.0

    def demand(self, ttfa_s: float) -> float:
        return listener_demand(self.sessions, self.turn_audio_s, self.pause_s, ttfa_s)

    @property
    def busy(self) -> float | None:
        """Share of the workers' time spent synthesizing."""
        sched = self.sched
        if not sched or self.wall_s <= 0:
            return None
        return sched["synth_s"] / (self.wall_s * sched["workers"])

    @property
    def capacity(self) -> float | None:
        """Audio seconds per wall second the container makes with every worker busy."""
        sched = self.sched
        if not sched or sched["synth_s"] <= 0:
            return None
        return sched["audio_s"] / sched["synth_s"] * sched["workers"]

    def decisions(self) -> str:
        """`picks, contested %, differed %, depth mean/max` of the step, or '-'."""
        sched = self.sched
        picks = sched.get("picks", 0) if sched else 0
        if not picks:
            return "-"
        return (f"{picks:.0f} / {100 * sched['contested'] / picks:.0f}% / "
                f"{100 * sched['differed'] / picks:.0f}% / {sched['depth_sum'] / picks:.1f} "
                f"({'' if sched.get('depth_max_grew') else '<='}{sched['depth_max']:.0f})")

    def holds(self, slo_ms: float) -> bool:
        p95 = self.ttfa_ms(95)
        return bool(self.turns) and p95 is not None and p95 <= slo_ms and not self.underruns and not self.errors


def turn_sample(result: TurnResult) -> TurnSample:
    """TTFA, whole-turn underruns and audio of one turn."""
    times = [t for r in result.records for t in r.frame_times]
    sizes = [n / BYTES_PER_S for r in result.records for n in r.frame_sizes]
    runs = playback_underruns(times, sizes, tolerance_s=UNDERRUN_TOLERANCE_S)
    return TurnSample(result.turn_ttfa_s, runs.count, sum(sizes), result.errors, turn_audible_s(result))


def turn_audible_s(result: TurnResult) -> float | None:
    """From the turn's start to its first audible sample, played by one player for the whole turn."""
    before = 0
    for record in result.records:
        if record.first_audible_byte is not None:
            times = [t for r in result.records for t in r.frame_times]
            sizes = [n for r in result.records for n in r.frame_sizes]
            at = playback_time(times, sizes, before + record.first_audible_byte, BYTES_PER_S,
                               tolerance_s=UNDERRUN_TOLERANCE_S)
            return None if at is None else at - result.started_at
        before += sum(record.frame_sizes)
    return None


def _session_loop(url: str, stop_at: float, out: list[TurnSample], config: TurnConfig, index: int,
                  pause_s: float) -> None:
    answers = load_answers()
    n = index * 7  # sessions start at different answers
    try:
        transport = SyncWebSocketTransport.open(url)
    except TransportError:
        out.append(TurnSample(None, 0, 0.0, 1))
        return
    session = ClientSession()
    try:
        while time.perf_counter() < stop_at:
            result = run_turn(transport, session, answers[n % len(answers)], config)
            n += 1
            sample = turn_sample(result)
            out.append(sample)
            if result.failure:
                return
            # The listener hears the turn out, then answers: the next turn starts after that.
            first = result.first_audio_at
            heard_at = first + sample.audio_s if first else time.perf_counter()
            time.sleep(max(0.0, heard_at - time.perf_counter()) + pause_s)
    finally:
        transport.close()


def measure_step(url: str, config_name: str, sessions: int, seconds: float, *,
                 tokens_per_second: float = 40.0, pause_s: float = 1.0,
                 read_sched: Callable[[], dict[str, float]] | None = None) -> StepResult:
    """`sessions` concurrent conversations for `seconds` (turns under way are finished)."""
    turn_config = TurnConfig(tokens_per_second=tokens_per_second, message_timeout_s=60.0)
    sched_before = read_sched() if read_sched else {}
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    samples: list[TurnSample] = []
    threads = [threading.Thread(target=_session_loop, daemon=True,
                                args=(url, started + seconds, samples, turn_config, i, pause_s))
               for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 180)
    wall = time.perf_counter() - started
    sched = sched_delta(sched_before, read_sched()) if read_sched else {}
    return StepResult(config_name, sessions, wall, list(samples), load_before, os.getloadavg()[0],
                      sched, pause_s)


# -- containers ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Layout:
    workers: int
    threads: int

    @classmethod
    def parse(cls, text: str) -> Layout:
        try:
            workers, threads = (int(x) for x in text.lower().split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"layout {text!r}: expected WORKERSxTHREADS, e.g. 2x1") from None
        if workers < 1 or threads < 1:
            raise argparse.ArgumentTypeError(f"layout {text!r}: both numbers must be at least 1")
        return cls(workers, threads)

    def __str__(self) -> str:
        return f"{self.workers}x{self.threads}"


class Container:
    """One reference container in a child process, stopped on exit."""

    def __init__(self, scheduler: str, layout: Layout, port: int, log_dir: Path) -> None:
        self.name = f"{scheduler} {layout}"
        self.url = f"http://127.0.0.1:{port}"
        log = (log_dir / f"container-{scheduler}-{layout}.log").open("wb")
        self.stats_file = log_dir / f"scheduler-{scheduler}-{layout}.json"
        self.stats_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "reference_container", "--host", "127.0.0.1", "--port", str(port),
             "--backend", "onnx", "--scheduler", scheduler, "--synth-workers", str(layout.workers),
             "--onnx-threads", str(layout.threads), "--log-level", "warning"],
            stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "SCHEDULER_STATS_FILE": str(self.stats_file)},
        )

    def read_sched(self) -> dict[str, float]:
        """The scheduler's running totals (written after its last job of a burst); {} before any."""
        try:
            return dict(json.loads(self.stats_file.read_text()))
        except (OSError, ValueError):
            return {}

    def wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"container {self.name} exited with {self.proc.returncode} (see its log)")
            try:
                with urllib.request.urlopen(self.url + "/ping", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(1.0)
        raise RuntimeError(f"container {self.name} not ready in time")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- report -------------------------------------------------------------------------------------


def held(steps: list[StepResult], slo_ms: float) -> int:
    """The largest session count held, counting up from 1 and stopping at the first count that fails."""
    best = 0
    for step in sorted(steps, key=lambda s: s.sessions):
        if not step.holds(slo_ms):
            break
        best = step.sessions
    return best


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def table(steps: list[StepResult], slo_ms: float, focus: tuple[int, ...] = (1, 2, 4)) -> str:
    """The side-by-side table (markdown): one row per configuration."""
    configs = list(dict.fromkeys(s.config for s in steps))
    head = ["config", f"held @ p95<{slo_ms:.0f} ms"]
    head += [f"TTFA p50/p95 @{n} (ms)" for n in focus]
    head += [f"audible TTFA p50/p95 @{n} (ms)" for n in focus]
    head += ["underruns (all steps)", "errors", f"audio s/s @{max(focus)}", "load avg 1m (min-max)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config in configs:
        mine = [s for s in steps if s.config == config]
        by_n = {s.sessions: s for s in mine}
        cells = [config, str(held(mine, slo_ms))]
        for n in focus:
            s = by_n.get(n)
            cells.append("-" if s is None else f"{_ms(s.ttfa_ms(50))} / {_ms(s.ttfa_ms(95))}")
        for n in focus:
            s = by_n.get(n)
            cells.append("-" if s is None else f"{_ms(s.ttfa_audible_ms(50))} / {_ms(s.ttfa_audible_ms(95))}")
        top = by_n.get(max(focus))
        loads = [x for s in mine for x in (s.load_before, s.load_after)]
        cells += [str(sum(s.underruns for s in mine)), str(sum(s.errors for s in mine)),
                  "-" if top is None else f"{top.audio_per_wall_s:.2f}",
                  f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def decisions_table(steps: list[StepResult], focus: tuple[int, ...] = (1, 2, 4)) -> str:
    """Per configuration and session count: picks / contested / differed from round-robin / depth."""
    configs = list(dict.fromkeys(s.config for s in steps))
    head = ["config"] + [f"@{n}: picks / contested / differed / depth mean (max)" for n in focus]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config in configs:
        by_n = {s.sessions: s for s in steps if s.config == config}
        rows.append("| " + " | ".join([config] + [by_n[n].decisions() if n in by_n else "-" for n in focus]) + " |")
    return "\n".join(rows)


def demand_table(steps: list[StepResult], slo_ms: float, focus: tuple[int, ...] = (1, 2, 4)) -> str:
    """Per configuration and session count: listeners' demand against production and capacity."""
    configs = list(dict.fromkeys(s.config for s in steps))
    head = ["config", "sessions", "turn audio s", f"demand @TTFA 0 / {slo_ms / 1000:g} s",
            "produced", "workers busy", "capacity (busy)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config in configs:
        for step in sorted((s for s in steps if s.config == config and s.sessions in focus), key=lambda s: s.sessions):
            busy, cap = step.busy, step.capacity
            rows.append("| " + " | ".join([
                config, str(step.sessions), f"{step.turn_audio_s:.1f}",
                f"{step.demand(0.0):.2f} / {step.demand(slo_ms / 1000):.2f}", f"{step.audio_per_wall_s:.2f}",
                "-" if busy is None else f"{100 * busy:.0f}%", "-" if cap is None else f"{cap:.2f}",
            ]) + " |")
    return "\n".join(rows)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = exit_codes.Parser(prog="python -m loadtest.capacity", description=__doc__.split("\n\n")[0])
    p.add_argument("--schedulers", nargs="+", default=["fifo", "round-robin", "deadline"],
                   choices=["fifo", "round-robin", "deadline"])
    p.add_argument("--layouts", nargs="+", type=Layout.parse, default=[Layout(1, 2), Layout(2, 1)],
                   help="WORKERSxTHREADS, e.g. 1x2 (one worker, two intra-op threads) 2x1")
    p.add_argument("--sessions", nargs="+", type=int, default=[1, 2, 3, 4])
    p.add_argument("--seconds", type=float, default=40.0, help="length of one step")
    p.add_argument("--slo-ttfa-ms", type=float, default=2000.0)
    p.add_argument("--tokens-per-second", type=float, default=40.0)
    p.add_argument("--pause", type=float, default=1.0, help="seconds a listener waits before the next turn")
    p.add_argument("--port-base", type=int, default=18600)
    p.add_argument("--json", type=Path, help="write every step's numbers here")
    p.add_argument("--log-dir", type=Path, default=Path("/tmp"))
    args = p.parse_args(argv)
    if any(n < 1 for n in args.sessions) or args.seconds <= 0:
        p.error("--sessions must be at least 1 and --seconds positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    combos = [(s, layout) for layout in args.layouts for s in args.schedulers]
    containers = [Container(s, layout, args.port_base + i, args.log_dir) for i, (s, layout) in enumerate(combos)]
    steps: list[StepResult] = []
    try:
        ready_by = time.monotonic() + 600
        for container in containers:
            container.wait_ready(ready_by)
        print(f"# {len(containers)} containers ready; cpus={os.cpu_count()} load={os.getloadavg()}", flush=True)
        for i, n in enumerate(sorted(args.sessions)):
            order = containers[i % len(containers):] + containers[: i % len(containers)]
            for container in order:
                step = measure_step(container.url, container.name, n, args.seconds,
                                    tokens_per_second=args.tokens_per_second, pause_s=args.pause,
                                    read_sched=container.read_sched)
                steps.append(step)
                cap = step.capacity
                print(f"{container.name:>18} n={n} turns={len(step.turns)} ttfa p50/p95="
                      f"{_ms(step.ttfa_ms(50))}/{_ms(step.ttfa_ms(95))} ms audible p50/p95="
                      f"{_ms(step.ttfa_audible_ms(50))}/{_ms(step.ttfa_audible_ms(95))} ms underruns={step.underruns} "
                      f"errors={step.errors} audio/s={step.audio_per_wall_s:.2f} "
                      f"demand@0={step.demand(0.0):.2f} capacity={'-' if cap is None else f'{cap:.2f}'} "
                      f"decisions={step.decisions()} "
                      f"load={step.load_before:.1f}->{step.load_after:.1f}", flush=True)
    except RuntimeError as exc:
        print(f"capacity: {exc}", file=sys.stderr)
        return exit_codes.RUN_FAILED
    finally:
        for container in containers:
            container.stop()
    focus = tuple(n for n in (1, 2, 4) if n in args.sessions) or (min(args.sessions),)
    print()
    print(table(steps, args.slo_ttfa_ms, focus))
    print()
    print(decisions_table(steps, focus))
    print()
    print(demand_table(steps, args.slo_ttfa_ms, focus))
    if args.json:
        payload = {"slo_ttfa_ms": args.slo_ttfa_ms, "cpus": os.cpu_count(),
                   "steps": [{**asdict(s), "p50_ms": s.ttfa_ms(50), "p95_ms": s.ttfa_ms(95),
                              "ttfa_audible_ms": {"p50": s.ttfa_audible_ms(50), "p95": s.ttfa_audible_ms(95)},
                              "audio_per_wall_s": s.audio_per_wall_s, "busy": s.busy, "capacity": s.capacity,
                              "demand_ttfa0": s.demand(0.0), "demand_slo": s.demand(args.slo_ttfa_ms / 1000)}
                             for s in steps]}
        args.json.write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
