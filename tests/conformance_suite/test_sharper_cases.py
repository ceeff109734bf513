"""The cases that kill the last contract-breaking mutants of the reference container (issue 23, point 7):
health.ping.loading.1 (/ping while the model loads) and robust.flood.2 (a flood past a session's bound).
Each fails on a toy with the mutant's defect (tests/conformance_suite/test_broken_toys.py), passes on
the reference container (served here with a fake model), and never says OK without its situation."""

from __future__ import annotations

import time

import pytest

from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.ping_log import PingLog
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import Target, wait_ready
from tests.container.helpers import FakeSynth, serve_app
from tests.toys.good import ServerThread
from tests.toys.inbox import InboxToy
from tests.toys.mutants import LoadingPingToy

FAST = Options(silence=3.0, case_timeout=60.0)
LOADING = "health.ping.loading.1"
FLOOD = "robust.flood.2"


def _log(*statuses: int | None) -> PingLog:
    log = PingLog()
    for status in statuses:
        log.add(status)
    return log


def _judge(log: PingLog | None, kind: str = "process") -> CaseResult:
    return run_case(REGISTRY[LOADING], Target(kind=kind, ping_log=log), FAST)


def test_ping_while_loading_is_judged_on_the_record() -> None:
    good = _judge(_log(None, None, 503, 503, 200))
    assert good.verdict is Verdict.OK, good.detail
    assert "503 in all 2 answers while loading" in good.detail
    bad = _judge(_log(None, 503, 500, 500, 200))
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert "/ping answered HTTP 500 in 2 of 3 answers while loading" in bad.detail


def test_ping_while_loading_is_never_ok_without_a_loading_window() -> None:
    started_elsewhere = _judge(None, kind="url")
    assert started_elsewhere.verdict is Verdict.NOT_JUDGED
    assert "did not start this container (a url target)" in started_elsewhere.detail
    ready_at_once = _judge(_log(None, None, 200, 500))  # what comes after ready is other cases' business
    assert ready_at_once.verdict is Verdict.NOT_JUDGED
    assert "no loading window seen" in ready_at_once.detail


class SlowLoadingSynth(FakeSynth):
    """The fake model, loading for `load_s` seconds (the reference container answers /ping meanwhile)."""

    def __init__(self, load_s: float = 0.0, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.load_s = load_s

    def load(self) -> None:
        time.sleep(self.load_s)


@pytest.mark.timeout(60)
def test_the_reference_container_answers_503_while_loading() -> None:
    log = PingLog()
    with serve_app(SlowLoadingSynth(load_s=1.0)) as server:
        wait_ready(server.url, 20.0, lambda _: None, server.thread.is_alive, log)
        result = run_case(REGISTRY[LOADING], Target(kind="process", base_url=server.url, ping_log=log), FAST)
    assert result.verdict is Verdict.OK, result.detail


@pytest.mark.timeout(60)
def test_the_loading_toy_is_judged_through_the_suites_own_start() -> None:
    """The same polling the process and Docker targets use records the toy's answers."""
    for status, verdict in ((500, Verdict.FAILED), (503, Verdict.OK)):
        log = PingLog()
        with ServerThread(LoadingPingToy(while_loading=status, load_s=0.8).app()) as server:
            wait_ready(server.url, 10.0, lambda _: None, server.thread.is_alive, log)
        assert _judge(log).verdict is verdict, (status, log.answers)


@pytest.mark.timeout(90)
def test_a_flood_past_the_reference_containers_bound_is_answered_busy() -> None:
    """The reference container's session holds 1,024 unread messages: the valid ones behind 1,200
    without text are refused busy, in their turn, and the session goes on."""
    with serve_app(FakeSynth(chunks=2, delay_s=0.1)) as server:
        wait_ready(server.url, 20.0, lambda _: None, server.thread.is_alive)
        result = run_case(REGISTRY[FLOOD], Target(kind="url", base_url=server.url), FAST)
    assert result.verdict is Verdict.OK, result.detail
    assert "refused busy at the session's bound" in result.detail, result.detail


@pytest.mark.timeout(90)
def test_a_flood_is_ok_on_a_session_with_a_bound_that_answers_busy_and_on_one_without_a_bound() -> None:
    for toy, phrase in ((InboxToy(overflow="busy"), "refused busy"), (InboxToy(overflow="busy", bound=10**6),
                                                                      "none refused busy")):
        with ServerThread(toy.app()) as server:
            result = run_case(REGISTRY[FLOOD], Target(kind="url", base_url=server.url), FAST)
        assert result.verdict is Verdict.OK, result.detail
        assert phrase in result.detail, result.detail
        assert (toy.overflowed > 0) == (toy.bound < 10**6)
