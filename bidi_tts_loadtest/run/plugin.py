"""Locust event wiring: options, per-process records, worker-to-master shipping, summary, SLO gate.

Each process keeps a :class:`~bidi_tts.metrics.LatencyRecorder`. A worker drains it into every
periodic stats report (``report_to_master``) and once more, through the custom message
``bidi_tts_records``, when it stops, before it tells the master it stopped; the master merges
both. At ``quitting`` the master (or the single local process) builds the summary from the exact
merged samples, writes ``--summary-json`` and the reports, and, when any ``--slo-*`` option is
set, makes the exit code the verdict.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import STATE_RUNNING, STATE_SPAWNING, LocalRunner, MasterRunner, WorkerRunner

from bidi_tts.metrics import LatencyRecorder
from bidi_tts_loadtest.core import exit_codes
from bidi_tts_loadtest.core.preflight import target_unreachable
from bidi_tts_loadtest.core.settings import run_settings
from bidi_tts_loadtest.core.target import target_problem
from bidi_tts_loadtest.run.failures import FATAL, FailureLog
from bidi_tts_loadtest.run.options import add_arguments
from bidi_tts_loadtest.run.slo import Slo
from bidi_tts_loadtest.run.stats_table import install_table_without_mixed_aggregate, quiet_periodic_tables
from bidi_tts_loadtest.run.summary import build_summary, write_summary
from bidi_tts_loadtest.run.verdict import verdict_lines

RECORDS_MESSAGE = "bidi_tts_records"
REPORT_KEY = "bidi_tts"
log = logging.getLogger("loadtest")


@dataclass
class RunState:
    """What one Locust process keeps for the whole run."""

    recorder: LatencyRecorder = field(default_factory=LatencyRecorder)
    wav_budget: int = 0
    wav_written: int = 0
    sweep: Any = None  # the CapacitySweepShape when --shape sweep runs here
    verifier: Any = None  # loadtest.content_check.ContentVerifier when --verify-audio-every is set here
    summary: dict[str, Any] | None = None
    sessions_started: int = 0
    failures: FailureLog = field(default_factory=FailureLog)
    stopping: bool = False  # a fatal cause asked the runner to quit
    started_at: float | None = None  # wall clock of the first test_start, for the summary's settings

    def record_content_checks(self) -> None:
        """Move the verifier's finished judgements into the recorder (from the greenlet side)."""
        from bidi_tts_loadtest.run.summary import CONTENT_CAUSE, CONTENT_CHECKED, CONTENT_ERROR

        now = time.time()
        for result in self.verifier.take_results() if self.verifier is not None else []:
            self.recorder.add(CONTENT_CHECKED, 1.0, now)
            self.recorder.add(CONTENT_ERROR, 0.0 if result.ok else 1.0, now)
            for kind in dict.fromkeys(result.kinds):
                self.recorder.add(CONTENT_CAUSE + kind, 1.0, now)

    def take_wav_slot(self) -> bool:
        if self.wav_budget > 0:
            self.wav_budget -= 1
            return True
        return False


def run_state(environment: Environment) -> RunState:
    """The RunState of this process (created on first use)."""
    state = getattr(environment, "bidi_tts_state", None)
    if state is None:
        state = RunState()
        environment.bidi_tts_state = state  # type: ignore[attr-defined]
    return state


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_arguments(parser)
    _usage_errors_exit_4(parser)


def _usage_errors_exit_4(parser: Any) -> None:
    """Locust's own option errors are argparse's exit 2; the project's scheme says 4 (docs/exit-codes.md)."""

    def error(message: str) -> Any:
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(exit_codes.USAGE)

    parser.error = error


def _stop_before_the_run(message: str, code: int) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


@events.init.add_listener
def _on_init(environment: Environment, runner: Any = None, **_: Any) -> None:
    state = run_state(environment)
    options = environment.parsed_options
    if not isinstance(runner, MasterRunner):
        _wire_content_checks(environment, state)  # before the worker's test_stop flush
        _wire_audio_produced(environment, state)
    if not isinstance(runner, WorkerRunner):
        _wire_active_users(environment, state)
    if isinstance(runner, WorkerRunner):
        _wire_worker(environment, runner, state)
    elif isinstance(runner, MasterRunner):
        _wire_master(runner, state)
    if options is not None and not isinstance(runner, WorkerRunner):
        from bidi_tts_loadtest.run.shapes import build_shape

        shape = build_shape(options, state)
        if shape is not None:
            environment.shape_class = shape
            shape.runner = runner
    if options is not None:
        state.wav_budget = options.wav_dumps
    if options is not None and not isinstance(runner, WorkerRunner):
        problem = target_problem(options, environment.host)
        # Without --headless the host may still come from the web UI's form.
        if problem is not None and (options.headless or environment.host or options.endpoint_name):
            _stop_before_the_run(problem, exit_codes.USAGE)
        # A dead port stops a headless run at once (with the web UI the target may come up later).
        dead = target_unreachable(options, environment.host) if problem is None and options.headless else None
        if dead is not None:
            _stop_before_the_run(dead, exit_codes.UNREACHABLE)
        install_table_without_mixed_aggregate()

    @environment.events.test_start.add_listener
    def _reset(**_: Any) -> None:  # a new test from the web UI after a fatal cause stopped the last one
        state.stopping = False
        if state.started_at is None:
            state.started_at = time.time()

    if not isinstance(runner, WorkerRunner):
        @environment.events.quit.add_listener
        def _verdict(exit_code: int, **_: Any) -> None:  # after Locust's tables, so it is what stays on screen
            if state.summary is not None:
                print("\n".join(verdict_lines(state.summary, exit_code)), file=sys.stderr, flush=True)

    if environment.web_ui is not None:
        from bidi_tts_loadtest.run.live import install_web_ui

        install_web_ui(environment, lambda: _live_summary(environment))


def _wire_audio_produced(environment: Environment, state: RunState) -> None:
    """Seconds of audio per completed message, at its completion (the over-time chart's audio-s per s)."""
    from bidi_tts_loadtest.run.timeseries import AUDIO_S, BYTES_PER_AUDIO_S

    @environment.events.request.add_listener
    def _audio(request_type: str, name: str, response_length: int = 0, exception: Any = None, **_: Any) -> None:
        if name == "complete" and exception is None and response_length:
            state.recorder.add(AUDIO_S, response_length / BYTES_PER_AUDIO_S, time.time())


def _wire_active_users(environment: Environment, state: RunState) -> None:
    """Locust's user count once a second while a test runs (each user holds at most one session)."""
    import gevent

    from bidi_tts_loadtest.run.timeseries import ACTIVE_USERS

    sampler: list[Any] = []

    def sample() -> None:
        while True:
            if environment.runner is not None:
                state.recorder.add(ACTIVE_USERS, environment.runner.user_count, time.time())
            gevent.sleep(1.0)

    @environment.events.test_start.add_listener
    def _start(**_: Any) -> None:
        if not sampler:
            sampler.append(gevent.spawn(sample))

    @environment.events.test_stop.add_listener
    def _stop(**_: Any) -> None:
        while sampler:
            sampler.pop().kill(block=False)


def _live_summary(environment: Environment) -> dict[str, Any]:
    return build_summary(run_state(environment).recorder, Slo.from_options(environment.parsed_options))


def _wire_content_checks(environment: Environment, state: RunState) -> None:
    from bidi_tts_loadtest.run.summary import CONTENT_SKIPPED

    @environment.events.test_start.add_listener
    def _start(environment: Environment, **_: Any) -> None:
        every = getattr(environment.parsed_options, "verify_audio_every", 0) or 0
        if every and state.verifier is None:
            from bidi_tts_loadtest.run.content_check import ContentVerifier

            state.verifier = ContentVerifier(every=every)
            try:
                state.verifier.wait_ready()
            except RuntimeError as exc:
                log.error("bidi-tts: %s", exc)
                environment.process_exit_code = exit_codes.RUN_FAILED
                state.verifier.close()
                state.verifier = None
                if environment.runner is not None:  # quit once test_start is over (from inside, it is ignored)
                    import gevent

                    gevent.spawn(environment.runner.quit)

    @environment.events.test_stop.add_listener
    def _stop(**_: Any) -> None:
        if state.verifier is not None:
            state.verifier.drain(timeout_s=60.0)
            state.record_content_checks()
            state.recorder.add(CONTENT_SKIPPED, state.verifier.summary()["skipped_busy"], time.time())
            state.verifier.close()
            state.verifier = None


def _wire_worker(environment: Environment, runner: WorkerRunner, state: RunState) -> None:
    @environment.events.report_to_master.add_listener
    def _report(client_id: str, data: dict[str, Any], **_: Any) -> None:
        data[REPORT_KEY] = state.recorder.drain()

    @environment.events.test_stop.add_listener
    def _flush(**_: Any) -> None:
        runner.send_message(RECORDS_MESSAGE, state.recorder.drain())

    # Workers receive their options from the master on spawn; read the WAV budget then.
    @environment.events.test_start.add_listener
    def _start(environment: Environment, **_: Any) -> None:
        state.wav_budget = getattr(environment.parsed_options, "wav_dumps", 0) or 0


def _wire_master(runner: MasterRunner, state: RunState) -> None:
    @runner.environment.events.worker_report.add_listener
    def _merge(client_id: str, data: dict[str, Any], **_: Any) -> None:
        if REPORT_KEY in data:
            state.recorder.merge_state(data[REPORT_KEY])

    def _merge_message(environment: Environment, msg: Any, **_: Any) -> None:
        state.recorder.merge_state(msg.data)

    runner.register_message(RECORDS_MESSAGE, _merge_message)


@events.quitting.add_listener
def _on_quitting(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner) or environment.parsed_options is None:
        return
    options = environment.parsed_options
    state = run_state(environment)
    if state.summary is not None:  # quitting fires again when a signal interrupts the shutdown
        return
    quiet_periodic_tables()
    runner = environment.runner
    if isinstance(runner, LocalRunner) and runner.state in (STATE_SPAWNING, STATE_RUNNING):
        runner.stop()  # SIGTERM or the web UI's quit: stop the users first so cut sessions count
    slo = Slo.from_options(options)
    summary = build_summary(state.recorder, slo)
    if state.sweep is not None:
        summary["capacity"] = state.sweep.result()
    summary["settings"] = run_settings(options, environment.host, state.started_at, time.time())
    state.summary = summary
    if options.summary_json:
        write_summary(summary, options.summary_json)
    if options.report_dir:
        from bidi_tts_loadtest.run.reports import write_reports

        window = None if state.started_at is None else (state.started_at, time.time())
        write_reports(options.report_dir, state.recorder, summary, state.sweep, window=window)
    _print(summary)
    ok, broken = exit_codes.OK, exit_codes.BROKEN
    if state.sweep is not None:
        environment.process_exit_code = ok if summary["capacity"]["holds_sessions"] else broken
    elif slo.any_set:
        environment.process_exit_code = ok if summary["slo_passed"] else broken
    if state.stopping or FATAL & summary["failures"].keys():
        environment.process_exit_code = exit_codes.UNREACHABLE  # credentials, region, bad target: not usable


def _print(summary: dict[str, Any]) -> None:
    t, c = summary["ttfa_ms"], summary["complete_ms"]

    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.1f}"

    log.info(
        "bidi-tts: %d sessions (%d completed, %d failed, %d cut), %d messages, %d errors, %d underruns; "
        "TTFA ms p50 %s p95 %s p99 %s max %s; complete ms p95 %s; goodput %s; content errors %d of %d turns heard",
        summary["sessions"], summary["sessions_completed"], summary["sessions_failed"], summary["sessions_cut"],
        summary["messages"], summary["errors"], summary["underruns"],
        f(t["p50"]), f(t["p95"]), f(t["p99"]), f(t["max"]), f(c["p95"]), summary["goodput"],
        summary["content_errors"], summary["content_checked"],
    )
    a = summary.get("ttfa_audible_ms") or {}
    log.info("bidi-tts: audible TTFA ms (first sample >= -40 dBFS) p50 %s p95 %s p99 %s max %s",
             f(a.get("p50")), f(a.get("p95")), f(a.get("p99")), f(a.get("max")))
    if summary["sessions_cut"]:
        log.info("bidi-tts: %d sessions were still running when the run ended (counted as cut, not failed)",
                 summary["sessions_cut"])
    for cause, count in summary["failures"].items():
        log.error("bidi-tts: %d sessions failed: %s", count, cause)
    if summary["slo_broken"]:
        log.error("bidi-tts SLO broken: %s", "; ".join(summary["slo_broken"]))
    elif any(v is not None for v in summary["slo"].values()):
        log.info("bidi-tts SLO met")
