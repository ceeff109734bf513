"""The pytest plugin of the conformance suite (loaded by the root conftest.py).

Options pinned in CONTRACT.md section 2 (--container-url, --endpoint-name, --region, --endpoint-url,
--endpoint-ca, --conformance-report) plus --target, --image, --case, --clause, --list-cases, --voice,
--sample-rate, --case-timeout, --reply-timeout, --ready-timeout, --conformance-html. Each case of the
registry becomes one pytest item named by its id. After preflight.py has checked the command line and
that the target can be reached, a target the suite starts itself (a process, a Docker image) is
launched in a thread when the first test of the cases' own folder runs (the property tests load
beside it), and the first case waits for it; other targets are taken as they are at the first case.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bidi_tts.dialects import DEFAULT_DIALECT, DIALECTS, dialect_at
from bidi_tts.protocol import DEFAULT_SAMPLE_RATE, DEFAULT_VOICE
from bidi_tts_conformance import preflight, selection
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import Case, CaseResult, Registry, Verdict
from bidi_tts_conformance.report import Entry, RunInfo, pages_dir, summary_lines, utc_now
from bidi_tts_conformance.report_html import write_reports
from bidi_tts_conformance.runner import SuiteRunner, unmet_requirement
from bidi_tts_conformance.targets import (
    DEFAULT_IMAGE,
    DockerTarget,
    ProcessTarget,
    SageMakerEndpointTarget,
    Target,
    docker_available,
)

DEFAULT_REPORT = "reports/conformance.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("conformance", "TTS bidirectional-streaming conformance suite")
    g.addoption("--container-url", default=None, help="check a running container (http://host:port)")
    g.addoption("--endpoint-name", default=None, help="check a SageMaker endpoint")
    g.addoption("--region", default=os.environ.get("AWS_REGION", "us-east-1"), help="endpoint region")
    g.addoption("--endpoint-url", default=None, help="SageMaker runtime URL (e.g. a local stand-in)")
    g.addoption("--endpoint-ca", default=None, help="CA certificate (PEM) to trust for --endpoint-url")
    g.addoption("--target", choices=("auto", "docker", "process"), default="auto",
                help="how to start the reference container when no URL/endpoint is given")
    g.addoption("--image", default=DEFAULT_IMAGE,
                help=f"Docker image for --target docker (default {DEFAULT_IMAGE})")
    g.addoption("--conformance-report", default=None, help=f"JSON report path (default {DEFAULT_REPORT})")
    g.addoption("--conformance-html", default=None, help="also write an HTML report here")
    g.addoption("--case", action="append", default=[], help="run only cases whose id matches this glob")
    g.addoption("--list-cases", action="store_true", help="list case ids, clauses and descriptions; exit")
    g.addoption("--conformance-strict", action="store_true",
                help="NON-STRICT verdicts fail (pytest's own --strict does the same)")
    g.addoption("--voice", default=DEFAULT_VOICE, help=f"voice for the cases (default {DEFAULT_VOICE})")
    g.addoption("--sample-rate", type=int, default=DEFAULT_SAMPLE_RATE,
                help=f"sample rate for the cases (default {DEFAULT_SAMPLE_RATE})")
    g.addoption("--case-timeout", type=float, default=None,
                help="seconds for one whole case (default: 25x the silence allowed, 60 to 300)")
    g.addoption("--reply-timeout", type=float, default=None,
                help="seconds of silence allowed while an expected frame is due (default: calibrated on the "
                     "container at the start of the run, 2 to 60)")
    g.addoption("--container-log", default=None, help="write the process target's output here")
    g.addoption("--dialect", choices=tuple(DIALECTS), default=DEFAULT_DIALECT,
                help=f"the wire protocol the sessions speak (default {DEFAULT_DIALECT}; docs/dialects.md)")
    g.addoption("--ws-path", default=None,
                help="the WebSocket route the dialect is served on, when not its own (e.g. "
                     "/invocations-bidirectional-stream for a SageMaker relay in front of vLLM-Omni)")
    preflight.add_options(g)


class CaseCollection:
    """Put one in a test module: the plugin turns it into one item per selected case."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry


class ConformanceState:
    """Per-run state: the target (started lazily), the results, the report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # A timeout not given keeps Options' default (and is calibrated on the container when the run starts).
        timeouts = {"silence": config.getoption("reply_timeout"), "case_timeout": config.getoption("case_timeout")}
        self.options = Options(
            voice=config.getoption("voice"),
            sample_rate=config.getoption("sample_rate"),
            dialect=config.getoption("dialect"),
            **{name: value for name, value in timeouts.items() if value is not None},
        )
        self._calibrate = timeouts["silence"] is None
        self._case_timeout_given = timeouts["case_timeout"] is not None
        self.strict = bool(config.getoption("conformance_strict") or config.getoption("strict", False))
        self.planned = self._plan()
        self.planned.dialect = dialect_at(self.options.dialect, config.getoption("ws_path"))
        self.runner = SuiteRunner(self.planned, self.options, calibrate_timeouts=self._calibrate,
                                  case_timeout_given=self._case_timeout_given, progress=self.note)
        self._started = False
        self._start_error: str | None = None
        # A target the suite starts itself is launched ahead of the first case (see begin()).
        self._launch: threading.Thread | None = None
        self._launch_error: BaseException | None = None
        self._launch_notes: list[str] = []
        self.launch_dir: Path | None = None
        self.results: dict[str, CaseResult] = {}
        self.entries: dict[str, Entry] = {}
        self.cases: list[Case] = []

    def _plan(self) -> Target:
        opt = self.config.getoption
        if opt("container_url"):
            url = str(opt("container_url")).rstrip("/")
            return Target(kind="url", base_url=url, description=f"container {url}")
        if opt("endpoint_name"):
            return SageMakerEndpointTarget(endpoint_name=opt("endpoint_name"), region=opt("region"),
                                           endpoint_url=opt("endpoint_url"), ca_file=opt("endpoint_ca"))
        image = opt("image")
        kind = opt("target")
        if kind == "auto":
            available, why = docker_available(image)
            kind = "docker" if available else "process"
            chosen = f"Docker image {image}" if available else f"local process ({why})"
            self.note(f"target auto: {chosen}")
        if kind == "docker":
            return DockerTarget(image=image)
        return ProcessTarget(log_path=opt("container_log"))

    def note(self, message: str) -> None:
        """A progress line for people, printed at once even while pytest captures a test's output."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if capture is None:
            reporter.write_line(f"[conformance] {message}")
            return
        with capture.global_and_fixture_disabled():
            reporter.ensure_newline()
            reporter.write_line(f"[conformance] {message}")

    def begin(self) -> None:
        """Launch a process or Docker target in a thread, so that it loads while the tests before the
        first case run (the property tests beside the cases); its progress lines wait for target()."""
        if self._started or self._launch is not None or self.planned.kind not in ("process", "docker"):
            return

        def launch() -> None:
            try:
                self.planned.start(self._launch_notes.append)
            except BaseException as exc:  # handed to target(), which fails the case that needs it
                self._launch_error = exc

        self._launch_notes.append("launched ahead of the first case, while the tests before it ran")
        self._launch = threading.Thread(target=launch, name="conformance-target-start", daemon=True)
        self._launch.start()

    def target(self) -> Target:
        """The started target; the first call starts it, or waits for begin()'s launch (a failed start
        is remembered)."""
        if self._start_error is not None:
            pytest.fail(self._start_error, pytrace=False)
        if not self._started:
            self._started = True
            try:
                if self._launch is None:
                    self.planned.start(self.note)
                else:
                    self._join_launch()
            except Exception as exc:
                self._start_error = f"the {self.planned.kind} target did not start: {exc}"
                pytest.fail(self._start_error, pytrace=False)
        return self.planned

    def _join_launch(self) -> None:
        assert self._launch is not None
        while self._launch.is_alive():
            self._launch.join(timeout=0.5)
        for line in self._launch_notes:
            self.note(line)
        if self._launch_error is not None:
            raise self._launch_error

    def stop(self) -> None:
        if self._started or self._launch is not None:
            self.planned.stop()  # a launch still waiting for /ping sees its container gone and ends
        if self._launch is not None:
            self._launch.join(timeout=30)
            self.planned.stop()


STATE = pytest.StashKey[ConformanceState]()


def _state(config: pytest.Config) -> ConformanceState:
    if STATE not in config.stash:
        config.stash[STATE] = ConformanceState(config)
    return config.stash[STATE]


class CaseItem(pytest.Item):
    """One conformance case as a pytest test (its name is the case id)."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.user_properties.append(("case_id", case.id))
        self.user_properties.append(("clauses", ",".join(case.clauses)))

    def runtest(self) -> None:
        state = _state(self.config)
        reason = unmet_requirement(self.case, state.planned)
        if reason is None:
            state.target()
            result = state.runner.run(self.case)
        else:
            result = CaseResult(self.case, Verdict.SKIPPED, reason)
        state.results[self.case.id] = result
        self.user_properties.append(("verdict", result.verdict.value))
        self.user_properties.append(("detail", result.detail))
        if result.verdict is Verdict.SKIPPED:
            pytest.skip(result.detail)
        if result.verdict is Verdict.NOT_JUDGED:
            pytest.skip(f"NOT-JUDGED: {result.detail}")
        if result.verdict is Verdict.FAILED:
            raise CaseFailure(result)
        if result.verdict is Verdict.NON_STRICT and state.strict:
            raise CaseFailure(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            r = excinfo.value.result
            return (f"{r.case.id} [{', '.join(r.case.clauses)}] {r.verdict.value}: {r.case.description}\n"
                    f"  expected: {r.expected or r.case.expectation}\n"
                    f"  actual:   {r.actual or '-'}\n"
                    f"  detail:   {r.detail}")
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"conformance case {self.case.id}"


class CaseFailure(Exception):
    """Raised by a CaseItem whose verdict fails the run."""

    def __init__(self, result: CaseResult) -> None:
        self.result = result
        super().__init__(result.detail)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list[CaseItem] | None:
    if not isinstance(obj, CaseCollection):
        return None
    cases = selection.run_order(selection.select(obj.registry, collector.config.getoption("case"),
                                                 collector.config.getoption("clause")))
    _state(collector.config).cases = cases
    return [CaseItem.from_parent(collector, name=c.id, case=c) for c in cases]


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    # Usage errors and an unreachable target: one line before anything runs (preflight.py).
    return preflight.check_command_line(config)


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("list_cases", False):
        from bidi_tts_conformance.cases import REGISTRY

        for c in selection.select(REGISTRY, config.getoption("case"), config.getoption("clause")):
            print(f"{c.id:<28} {','.join(c.clauses):<36} {c.description}")
        pytest.exit("listed the conformance cases", returncode=0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Selecting cases, or naming a container to check, runs only cases: the property tests the same path
    # collects check the suite's own library, not the container, and stay out of the totals a container
    # author reads (the main CI job runs them on their own: tox.ini).
    target_given = bool(config.getoption("container_url") or config.getoption("endpoint_name"))
    if (selection.selecting(config.getoption("case"), config.getoption("clause"))
            or (target_given and any(isinstance(item, CaseItem) for item in items))):
        others = [item for item in items if not isinstance(item, CaseItem)]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if isinstance(item, CaseItem)]
    case_items = [item for item in items if isinstance(item, CaseItem)]
    if case_items:
        state = _state(config)
        runnable = [item for item in case_items if unmet_requirement(item.case, state.planned) is None]
        state.launch_dir = runnable[0].path.parent if runnable else None
    if items and all(isinstance(item, CaseItem) for item in items):
        # A run of cases only: each failure is printed once, in the summary table with its expected and
        # actual (pytest_terminal_summary), not also as a traceback section and a short-summary line.
        config.option.tbstyle = "no"
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.reportchars = "".join(c for c in reporter.reportchars if c not in "fE")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # The target loads while the tests in the cases' own folder run before them (`pytest conformance`:
    # the property tests), not during a whole test suite that merely ends with the cases.
    if STATE not in item.config.stash:
        return
    state = item.config.stash[STATE]
    if state.launch_dir is not None and item.path.is_relative_to(state.launch_dir):
        state.begin()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if isinstance(item, CaseItem) and (report.when == "call" or report.outcome != "passed"):
        state = _state(item.config)
        result = state.results.get(item.case.id) or CaseResult(
            item.case, Verdict.FAILED, str(call.excinfo.value) if call.excinfo else "not run")
        if item.case.id not in state.entries or report.outcome != "passed":
            state.entries[item.case.id] = Entry.from_result(result, report.outcome)
    return report


RUN_STARTED = pytest.StashKey[Any]()  # when the session began, for the report


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[RUN_STARTED] = utc_now()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if STATE not in session.config.stash:
        return
    state = session.config.stash[STATE]
    state.stop()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if STATE not in config.stash:
        return
    state = config.stash[STATE]
    entries = [state.entries[c.id] for c in state.cases if c.id in state.entries]
    if not entries:
        return
    path = Path(config.getoption("conformance_report") or DEFAULT_REPORT)
    html_path = config.getoption("conformance_html")
    run = RunInfo.collect(state.planned, state.runner, started=config.stash.get(RUN_STARTED, None),
                          strict=state.strict, case_globs=config.getoption("case") or [],
                          target_option=config.getoption("target"))
    write_reports(path, Path(html_path) if html_path else None, entries, run)
    terminalreporter.section(f"conformance: {state.planned.label}")
    for line in summary_lines(entries):
        terminalreporter.write_line(line)
    if html_path:
        terminalreporter.write_line(f"HTML report: {Path(html_path).resolve()} (a page per case in "
                                    f"{pages_dir(Path(html_path)).resolve()})")
    terminalreporter.write_line(f"conformance report: {path.resolve()} ({time.strftime('%H:%M:%S')})")
