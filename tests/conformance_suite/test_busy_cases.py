"""health.busy.1 (accept and /ping while other sessions synthesize): it fails on a toy that synthesizes on
its event loop (tests/toys/busy.py, in test_broken_toys.py's table), passes on the reference container,
and is NOT-JUDGED when the situation did not occur. health.ping.post.1 passes on the reference container
(its toys are in the same table)."""

from __future__ import annotations

import pytest

from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import Target
from tests.container.timed_server import timed_container
from tests.toys.busy import SlowAcceptsToy
from tests.toys.good import ServerThread, ToyConfig, ToyContainer

FAST = Options(silence=3.0, case_timeout=30.0)
BUSY = "health.busy.1"


def _on(url: str, cid: str) -> CaseResult:
    return run_case(REGISTRY[cid], Target(kind="url", base_url=url), FAST)


@pytest.mark.timeout(60)
def test_busy_is_not_judged_when_the_busy_sessions_are_done_at_once() -> None:
    """A toy whose long text makes 1 s of audio at once: nothing is synthesizing during the polls. (Not the
    default toy: its 22 s of tone for this text take its thread, and the GIL, long enough to be busy.)"""
    with ServerThread(ToyContainer(ToyConfig(audio_s_per_char=0.001)).app()) as server:
        result = _on(server.url, BUSY)
    assert result.verdict is Verdict.NOT_JUDGED, result.detail
    assert "no busy message was still being synthesized after the polls" in result.detail


@pytest.mark.timeout(60)
def test_two_slow_handshakes_among_many_are_non_strict_not_failed() -> None:
    """The 3 busy sessions are handshakes 1-3; the 5th and 6th are the 2nd and 3rd of the polls (a stall of
    a loaded machine spans two polls 0.1 s apart)."""
    with ServerThread(SlowAcceptsToy(slow_at=(5, 6), hold_s=0.4).app()) as server:
        result = _on(server.url, BUSY)
    assert result.verdict is Verdict.NON_STRICT, result.detail
    assert "2 handshakes of" in result.detail and "over 250 ms while busy" in result.detail
    assert "had audio after them, mid-message" in result.detail


@pytest.mark.timeout(60)
def test_most_handshakes_slow_while_busy_is_failed() -> None:
    """Every other poll held 0.4 s (answered, so not the unanswered rule): more than a quarter slow."""
    with ServerThread(SlowAcceptsToy(slow_at=range(4, 200, 2), hold_s=0.4).app()) as server:
        result = _on(server.url, BUSY)
    assert result.verdict is Verdict.FAILED, result.detail
    assert "slow accept while busy" in result.detail


@pytest.mark.timeout(90)
def test_the_reference_container_accepts_and_answers_ping_while_three_sessions_synthesize() -> None:
    """A real process, the timed backend with the 2-core ONNX profile: synthesis off the event loop.
    It answers POST /ping as well as GET (health.ping.post.1)."""
    with timed_container("cpu-onnx-2core") as url:
        post = _on(url, "health.ping.post.1")
        result = _on(url, BUSY)
    assert post.verdict is Verdict.OK, post.detail
    assert result.verdict is Verdict.OK, result.detail
    assert "had audio after them, mid-message" in result.detail
