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
p95 TTFA is under the SLO and no turn underran; its *held* figure is the largest n it held, with any
smaller count that missed named beside it (``32 (missed 8)``: one noisy small step does not hide the
larger counts that held, and is not hidden either). The 1-minute load average is recorded beside every
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
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bidi_tts.deadline import Deadline
from bidi_tts.local_container import LocalContainer
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
    message_ttfa_s: list[float] = field(default_factory=list)  # each message's, from its own send


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
    basis: str = "turn"  # what ttfa_ms measures: "turn" (from the LLM's first token) or "message" (from its send)

    def ttfa_ms(self, q: float) -> float | None:
        if self.basis == "message":
            return self.message_ttfa_ms(q)
        values = [t.ttfa_s * 1000 for t in self.turns if t.ttfa_s is not None]
        return percentile(values, q) if values else None

    def ttfa_audible_ms(self, q: float) -> float | None:
        values = [t.ttfa_audible_s * 1000 for t in self.turns if t.ttfa_audible_s is not None]
        return percentile(values, q) if values else None

    def message_ttfa_ms(self, q: float) -> float | None:
        values = [v * 1000 for t in self.turns for v in t.message_ttfa_s]
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
    return TurnSample(result.turn_ttfa_s, runs.count, sum(sizes), result.errors, turn_audible_s(result),
                      [r.ttfa_s for r in result.records if r.ttfa_s is not None])


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
                  pause_s: float, first_turn_at: float = 0.0) -> None:
    answers = load_answers()
    n = index * 7  # sessions start at different answers
    try:
        transport = SyncWebSocketTransport.open(url)
    except TransportError:
        out.append(TurnSample(None, 0, 0.0, 1))
        return
    session = ClientSession()
    try:
        time.sleep(max(0.0, first_turn_at - time.perf_counter()))
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
                 read_sched: Callable[[], dict[str, float]] | None = None, basis: str = "turn",
                 arrival_s: float = 0.0) -> StepResult:
    """`sessions` concurrent conversations for `seconds` (turns under way are finished).

    `arrival_s` spreads the sessions' first turns evenly over that many seconds (users do not all
    start talking in the same instant; with 0 they do, and a short step measures that burst)."""
    turn_config = TurnConfig(tokens_per_second=tokens_per_second, message_timeout_s=60.0)
    sched_before = read_sched() if read_sched else {}
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    samples: list[TurnSample] = []
    threads = [threading.Thread(target=_session_loop, daemon=True,
                                args=(url, started + seconds, samples, turn_config, i, pause_s,
                                      started + arrival_s * i / sessions))
               for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 180)
    wall = time.perf_counter() - started
    sched = sched_delta(sched_before, read_sched()) if read_sched else {}
    return StepResult(config_name, sessions, wall, list(samples), load_before, os.getloadavg()[0],
                      sched, pause_s, basis)


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


@dataclass(slots=True, frozen=True)
class Config:
    """One container configuration: `[BACKEND[=PROFILE]:]SCHEDULER[/WxT][/batchMS][/whole]`.

    `WxT`: W synthesis workers with T onnxruntime threads (default 1x2); `batchMS`: cross-session
    batching with that window (``--batch-window-ms``); `whole`: no streaming within a message (the
    first sentence is not cut at a clause: ``--first-clause-chars 0``; under LLM-paced load every
    message is one sentence, so each message is one unit). BACKEND is ``onnx`` or ``timed``
    (``timed=PROFILE`` names the profile; plain ``timed`` takes ``--timed-profile``).
    """

    scheduler: str
    layout: Layout
    backend: str = "onnx"
    profile: str | None = None
    batch_ms: float = 0.0
    whole: bool = False

    @classmethod
    def parse(cls, text: str, backend: str = "onnx", profile: str | None = None) -> Config:
        spec = text
        if ":" in spec:
            head, spec = spec.split(":", 1)
            backend, _, named = head.partition("=")
            profile = named or profile
        if backend not in ("onnx", "timed"):
            raise argparse.ArgumentTypeError(f"config {text!r}: backend must be onnx or timed")
        if backend == "timed" and not profile:
            raise argparse.ArgumentTypeError(f"config {text!r}: a timed backend needs a profile "
                                             "(timed=NAME:... or --timed-profile)")
        scheduler, *rest = spec.split("/")
        if scheduler not in SCHEDULERS:
            raise argparse.ArgumentTypeError(f"config {text!r}: scheduler must be one of {', '.join(SCHEDULERS)}")
        layout, batch_ms, whole = Layout(1, 2), 0.0, False
        for part in rest:
            if part == "whole":
                whole = True
            elif part.startswith("batch"):
                try:
                    batch_ms = float(part[5:])
                except ValueError:
                    raise argparse.ArgumentTypeError(f"config {text!r}: expected batchMS, e.g. batch5") from None
                if not 0 < batch_ms <= 1000:
                    raise argparse.ArgumentTypeError(f"config {text!r}: the batch window must be 0-1000 ms")
            else:
                layout = Layout.parse(part)
        return cls(scheduler, layout, backend, profile if backend == "timed" else None, batch_ms, whole)

    @property
    def name(self) -> str:
        name = f"{self.scheduler} {self.layout}"
        if self.batch_ms:
            name += f" batch{self.batch_ms:g}"
        if self.whole:
            name += " whole"
        if self.backend == "timed":
            name = f"timed:{Path(self.profile or '').stem} {name}"
        return name

    def args(self) -> list[str]:
        """The container's command-line options for this configuration."""
        args = ["--backend", self.backend, "--scheduler", self.scheduler, "--synth-workers", str(self.layout.workers),
                # Capacity is measured by latency, not by refusals: admit every message.
                "--max-queue", "100000"]
        if self.backend == "timed":
            args += ["--timed-profile", self.profile or ""]
        else:
            args += ["--onnx-threads", str(self.layout.threads)]
        if self.batch_ms:
            args += ["--batch-window-ms", f"{self.batch_ms:g}"]
        if self.whole:
            args += ["--first-clause-chars", "0"]
        return args


SCHEDULERS = ("fifo", "round-robin", "deadline")


class Container:
    """One reference container in a child process, stopped on exit."""

    def __init__(self, config: Config, port: int, log_dir: Path) -> None:
        self.config = config
        self.name = config.name
        slug = "".join(c if c.isalnum() else "-" for c in config.name)
        self.stats_file = log_dir / f"scheduler-{slug}.json"
        self.stats_file.unlink(missing_ok=True)
        self.process = LocalContainer(port, [*config.args(), "--log-level", "warning"],
                                      log=log_dir / f"container-{slug}.log",
                                      env={"SCHEDULER_STATS_FILE": str(self.stats_file)})
        self.url = self.process.url

    def read_sched(self) -> dict[str, float]:
        """The scheduler's running totals (written after its last job of a burst); {} before any."""
        try:
            return dict(json.loads(self.stats_file.read_text()))
        except (OSError, ValueError):
            return {}

    def wait_ready(self, deadline: Deadline) -> None:
        waited = self.process.wait_ready(deadline.remaining(), interval=1.0)
        if waited.outcome == "exited":
            raise RuntimeError(f"container {self.name} exited with {self.process.returncode} (see its log)")
        if waited.outcome == "timeout":
            raise RuntimeError(f"container {self.name} not ready in time")

    def stop(self) -> None:
        self.process.stop()


# -- report -------------------------------------------------------------------------------------


def held(steps: list[StepResult], slo_ms: float) -> int:
    """The largest session count at which the SLO held (0: none did), whatever smaller counts did.

    Not "count up and stop at the first miss": on a shared machine one step's outlier at a small
    count (a p95 of 50-100 messages is their 3rd-5th largest value) would then hide every larger
    count that held. Whether the smaller counts held too is :func:`missed_below`'s answer, shown
    beside it (:func:`held_cell`)."""
    return max((s.sessions for s in steps if s.holds(slo_ms)), default=0)


def missed_below(steps: list[StepResult], slo_ms: float) -> list[int]:
    """The session counts below :func:`held`'s that missed the SLO (sorted; [] when all held)."""
    best = held(steps, slo_ms)
    return sorted({s.sessions for s in steps if s.sessions < best and not s.holds(slo_ms)})


def held_cell(steps: list[StepResult], slo_ms: float) -> str:
    """`32` when every measured count up to 32 held; `32 (missed 8)` when a smaller one did not."""
    best, missed = held(steps, slo_ms), missed_below(steps, slo_ms)
    return f"{best} (missed {', '.join(map(str, missed))})" if missed else str(best)


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
        cells = [config, held_cell(mine, slo_ms)]
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


def compare_table(steps: list[StepResult]) -> str:
    """Predicted (timed backend) against measured (the same configuration on onnx), per session count."""
    rows = ["| config | sessions | measured TTFA p50 / p95 (ms) | predicted p50 / p95 (ms) | p50 / p95 ratio "
            "| underruns measured / predicted | audio s per turn measured / predicted "
            "| audio-s/s measured / predicted |",
            "|---|---|---|---|---|---|---|---|"]
    for timed in dict.fromkeys(s.config for s in steps if s.config.startswith("timed:")):
        real = timed.split(" ", 1)[1]
        for n in sorted({s.sessions for s in steps if s.config == timed}):
            p = [s for s in steps if s.config == timed and s.sessions == n]
            m = [s for s in steps if s.config == real and s.sessions == n]
            if not p or not m:
                continue
            ps, ms = p[-1], m[-1]
            ratios = []
            for q in (50, 95):
                pv, mv = ps.ttfa_ms(q), ms.ttfa_ms(q)
                ratios.append("-" if not pv or not mv else f"{pv / mv:.2f}")
            rows.append(f"| {real} | {n} | {_ms(ms.ttfa_ms(50))} / {_ms(ms.ttfa_ms(95))} | "
                        f"{_ms(ps.ttfa_ms(50))} / {_ms(ps.ttfa_ms(95))} | {' / '.join(ratios)} | "
                        f"{ms.underruns} / {ps.underruns} | {ms.turn_audio_s:.1f} / {ps.turn_audio_s:.1f} | "
                        f"{ms.audio_per_wall_s:.2f} / {ps.audio_per_wall_s:.2f} |")
    return "\n".join(rows)


def plot(steps: list[StepResult], path: Path, slo_ms: float) -> None:
    """TTFA p95 and underruns against sessions, one line per configuration (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for config in dict.fromkeys(s.config for s in steps):
        mine = sorted((s for s in steps if s.config == config), key=lambda s: s.sessions)
        xs = [s.sessions for s in mine]
        top.plot(xs, [s.ttfa_ms(95) or float("nan") for s in mine], marker="o", label=config)
        bottom.plot(xs, [s.underruns for s in mine], marker="o", label=config)
    top.axhline(slo_ms, color="grey", linestyle="--", linewidth=1)
    top.set_yscale("log")
    top.set_ylabel(f"TTFA p95 (ms, per {mine[0].basis if steps else 'turn'})")
    bottom.set_ylabel("underruns (turns' stalls > 50 ms)")
    bottom.set_xlabel("LLM-paced sessions")
    bottom.set_xscale("log", base=2)
    top.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = exit_codes.Parser(prog="python -m loadtest.capacity", description=__doc__.split("\n\n")[0],
                          epilog="`python -m loadtest.capacity calibrate --help`: fit a timed-backend profile.")
    p.add_argument("--schedulers", nargs="+", default=["fifo", "round-robin", "deadline"],
                   choices=list(SCHEDULERS))
    p.add_argument("--layouts", nargs="+", type=Layout.parse, default=[Layout(1, 2), Layout(2, 1)],
                   help="WORKERSxTHREADS, e.g. 1x2 (one worker, two intra-op threads) 2x1")
    p.add_argument("--configs", nargs="+", metavar="SPEC",
                   help="instead of --schedulers x --layouts: [onnx:|timed[=PROFILE]:]SCHEDULER[/WxT][/batchMS]"
                        "[/whole], e.g. deadline/4x1/batch5 or timed=h200-eager:fifo/1x1/whole")
    p.add_argument("--backend", choices=["onnx", "timed"], default="onnx",
                   help="backend of configurations that name none (default onnx)")
    p.add_argument("--timed-profile", metavar="NAME|PATH", help="profile of timed configurations that name none")
    p.add_argument("--ttfa-basis", choices=["turn", "message"], default="turn",
                   help="turn: from the LLM's first token (waits for the LLM too); message: from each "
                        "message's send")
    p.add_argument("--sessions", nargs="+", type=int, default=[1, 2, 3, 4])
    p.add_argument("--seconds", type=float, default=40.0, help="length of one step")
    p.add_argument("--slo-ttfa-ms", type=float, default=2000.0)
    p.add_argument("--tokens-per-second", type=float, default=40.0)
    p.add_argument("--pause", type=float, default=1.0, help="seconds a listener waits before the next turn")
    p.add_argument("--arrival", type=float, default=0.0, metavar="S",
                   help="spread the sessions' first turns evenly over S seconds (default 0: all at once)")
    p.add_argument("--port-base", type=int, default=18600)
    p.add_argument("--json", type=Path, help="write every step's numbers here")
    p.add_argument("--plot", type=Path, help="write a PNG of TTFA p95 and underruns against sessions here")
    p.add_argument("--log-dir", type=Path, default=Path("/tmp"))
    args = p.parse_args(argv)
    if any(n < 1 for n in args.sessions) or args.seconds <= 0 or not 0 <= args.arrival < args.seconds:
        p.error("--sessions must be at least 1, --seconds positive and --arrival from 0 to below --seconds")
    if args.backend == "timed" and not args.timed_profile and not args.configs:
        p.error("--backend timed needs --timed-profile NAME|PATH")
    try:
        if args.configs:
            args.configs = [Config.parse(c, args.backend, args.timed_profile) for c in args.configs]
        else:
            args.configs = [Config(s, layout, args.backend, args.timed_profile)
                            for layout in args.layouts for s in args.schedulers]
    except argparse.ArgumentTypeError as exc:
        p.error(str(exc))
    names = [c.name for c in args.configs]
    if len(set(names)) != len(names):
        p.error("two configurations are the same")
    profiles = {c.profile for c in args.configs if c.profile}
    for profile in profiles:  # a bad profile: one line now, not a container that dies later
        error = _check_profile(profile)
        if error:
            p.error(error)
    return args


def _check_profile(spec: str) -> str | None:
    try:
        from reference_container.synthesizers.timed_profile import ProfileError, load_profile
    except ImportError:  # the load test installed without the container: the container will say it
        return None
    try:
        load_profile(spec)
    except ProfileError as exc:
        return str(exc)
    return None


def _calibrate(argv: list[str]) -> int:
    from bidi_tts_loadtest import calibrate

    p = exit_codes.Parser(prog="python -m loadtest.capacity calibrate",
                          description="Fit a timed-backend profile to a running container at one session.")
    p.add_argument("--container-url", help="http://HOST:PORT of a running container")
    p.add_argument("--refit", type=Path, metavar="PROFILE",
                   help="instead of measuring: fit again from the observations a calibration kept in PROFILE")
    p.add_argument("--out", type=Path, required=True, help="the profile JSON to write")
    p.add_argument("--name", help="the profile's name (default: the file's stem)")
    p.add_argument("--repeats", type=int, default=3, help="rounds over the calibration texts (after a warm-up round)")
    p.add_argument("--first-clause-chars", type=int, default=0,
                   help="the container's first-clause cut: 0 (the default) for a reference container started "
                        "with --first-clause-chars 0, as a calibration should be; its default is 40")
    p.add_argument("--tokens-per-char", type=float, default=calibrate.MISAKI_TOKENS_PER_CHAR,
                   help="phoneme tokens per character used to state the fit per token")
    args = p.parse_args(argv)
    if (args.container_url is None) == (args.refit is None):
        p.error("give --container-url (measure a container) or --refit PROFILE (fit its kept observations)")
    if args.refit is not None:
        if not args.refit.is_file():
            p.error(f"--refit: file {str(args.refit)!r} does not exist")
        if not args.out.parent.is_dir():
            p.error(f"folder {str(args.out.parent)!r} does not exist")
        try:
            return calibrate.refit(args.refit, args.out, name=args.name, tokens_per_char=args.tokens_per_char)
        except ValueError as exc:
            print(f"capacity calibrate: {exc}", file=sys.stderr)
            return exit_codes.RUN_FAILED
    if not args.container_url.startswith(("http://", "https://")):
        p.error("--container-url must start with http:// or https://")
    if args.repeats < 1 or args.tokens_per_char <= 0:
        p.error("--repeats must be at least 1 and --tokens-per-char positive")
    if not args.out.parent.is_dir():
        p.error(f"folder {str(args.out.parent)!r} does not exist")
    try:
        return calibrate.run(args.container_url, args.out, name=args.name or args.out.stem, repeats=args.repeats,
                             first_clause_chars=args.first_clause_chars, tokens_per_char=args.tokens_per_char)
    except (OSError, TransportError) as exc:
        print(f"capacity calibrate: cannot reach {args.container_url}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return exit_codes.UNREACHABLE
    except (TimeoutError, RuntimeError, ValueError) as exc:
        print(f"capacity calibrate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return exit_codes.RUN_FAILED


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["calibrate"]:
        return _calibrate(argv[1:])
    args = _parse_args(argv)
    containers = [Container(c, args.port_base + i, args.log_dir) for i, c in enumerate(args.configs)]
    steps: list[StepResult] = []
    try:
        ready_by = Deadline(600)
        for container in containers:
            container.wait_ready(ready_by)
        print(f"# {len(containers)} containers ready; cpus={os.cpu_count()} load={os.getloadavg()}", flush=True)
        for i, n in enumerate(sorted(args.sessions)):
            order = containers[i % len(containers):] + containers[: i % len(containers)]
            for container in order:
                step = measure_step(container.url, container.name, n, args.seconds,
                                    tokens_per_second=args.tokens_per_second, pause_s=args.pause,
                                    read_sched=container.read_sched, basis=args.ttfa_basis,
                                    arrival_s=args.arrival)
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
    counts = tuple(sorted(set(args.sessions)))
    focus = counts if len(counts) <= 6 else (tuple(n for n in (1, 2, 4) if n in counts) or counts[:1])
    print(f"# TTFA per {args.ttfa_basis}; load average 1m at the end: {os.getloadavg()[0]:.1f}")
    print()
    print(table(steps, args.slo_ttfa_ms, focus))
    if any(c.backend == "timed" for c in args.configs) and any(c.backend == "onnx" for c in args.configs):
        print()
        print(compare_table(steps))
    print()
    print(decisions_table(steps, focus))
    print()
    print(demand_table(steps, args.slo_ttfa_ms, focus))
    if args.json:
        by_config = {c: [s for s in steps if s.config == c] for c in dict.fromkeys(s.config for s in steps)}
        payload = {"slo_ttfa_ms": args.slo_ttfa_ms, "cpus": os.cpu_count(), "ttfa_basis": args.ttfa_basis,
                   "held": {c: {"sessions": held(mine, args.slo_ttfa_ms),
                                "missed_below": missed_below(mine, args.slo_ttfa_ms)} for c, mine in by_config.items()},
                   "steps": [{**asdict(s), "p50_ms": s.ttfa_ms(50), "p95_ms": s.ttfa_ms(95),
                              "ttfa_audible_ms": {"p50": s.ttfa_audible_ms(50), "p95": s.ttfa_audible_ms(95)},
                              "audio_per_wall_s": s.audio_per_wall_s, "busy": s.busy, "capacity": s.capacity,
                              "demand_ttfa0": s.demand(0.0), "demand_slo": s.demand(args.slo_ttfa_ms / 1000)}
                             for s in steps]}
        args.json.write_text(json.dumps(payload, indent=2))
    if args.plot:
        plot(steps, args.plot, args.slo_ttfa_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
