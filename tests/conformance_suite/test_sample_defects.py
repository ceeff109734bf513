"""Issue 32, part A: the misses and wrong blames the AWS sample's containers exposed, each shown on a toy
with the defect (tests/toys/sample_defects.py): the case now fails for the right reason, and the same
case still passes on the good toy."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from bidi_tts.local_container import LocalContainer, free_port
from bidi_tts_conformance import selection
from bidi_tts_conformance.cases import REGISTRY, stop
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.ping_log import PingLog
from bidi_tts_conformance.runner import SuiteRunner, run_case
from bidi_tts_conformance.targets import Target, wait_ready
from tests.toys import sample_defects as toys
from tests.toys.good import ServerThread, ToyContainer
from tests.toys.omni_good import OmniToy

FAST = Options(silence=1.5, case_timeout=30.0)

pytestmark = pytest.mark.timeout(120)

# The cases proven here rather than in test_broken_toys.py (they need a process toy): the phrase each
# failure names (test_broken_toys.PROVEN_ELSEWHERE reads this table).
PROCESS_PROOFS = {
    "stop.client.1": "work outlived its client",
    "stop.sigterm.1": "did not exit within 2 s of SIGTERM (sent mid-synthesis)",
}


def judge(make: Callable[[], ToyContainer], *case_ids: str) -> dict[str, CaseResult]:
    with ServerThread(make().app()) as server:
        target = Target(kind="url", base_url=server.url)
        return {cid: run_case(REGISTRY[cid], target, FAST) for cid in case_ids}


def good() -> ToyContainer:
    return ToyContainer(toys.PACED)


def test_request_id_is_judged_on_every_error_path() -> None:
    bad = judge(toys.RequestIdLostToy, "session.request_id.1")["session.request_id.1"]
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert "error (unknown voice) carries 'unknown'" in bad.detail
    assert "error (speed 0) carries 'unknown'" in bad.detail
    assert "empty text" not in bad.detail  # that path echoes it
    fine = judge(good, "session.request_id.1")["session.request_id.1"]
    assert fine.verdict is Verdict.OK, fine.detail
    assert "3 error paths" in fine.detail


def test_announced_then_refused_and_dropped_is_said_as_such() -> None:
    results = judge(toys.AnnounceThenDropToy, "errors.unknown_voice.1", "errors.bad_speed.1", "errors.text_required.1",
                    "errors.text_too_long.1")
    for result in results.values():
        assert result.verdict is Verdict.FAILED, result.detail
        assert "announced the message (synthesis_start), then refused it with error (no code)" in result.detail
        assert "closed the session with 1011" in result.detail
        assert "accepted and synthesized" not in result.detail


def test_an_uncoded_cancel_answer_with_a_usable_session_is_non_strict() -> None:
    result = judge(toys.UncodedCancelToy, "cancel.1")["cancel.1"]
    assert result.verdict is Verdict.NON_STRICT, result.detail
    assert "without a code" in result.detail


def test_cancel_queued_leaves_a_missing_audio_bytes_to_audio_consistent() -> None:
    results = judge(toys.NoAudioBytesToy, "cancel.queued.1", "audio.consistent.1")
    assert results["cancel.queued.1"].verdict is Verdict.OK, results["cancel.queued.1"].detail
    assert results["audio.consistent.1"].verdict is Verdict.FAILED
    assert "no integer audio_bytes" in results["audio.consistent.1"].detail


def test_an_ignored_sample_rate_is_caught_from_the_containers_own_duration() -> None:
    bad = judge(toys.IgnoredRateToy, "audio.rate.1")["audio.rate.1"]
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert "silently ignored" in bad.detail and "24000 Hz" in bad.detail
    fine = judge(good, "audio.rate.1")["audio.rate.1"]
    assert fine.verdict is Verdict.OK, fine.detail


def test_a_buffered_post_is_blamed_on_streaming_not_on_reachability() -> None:
    bad = judge(toys.BufferingPostToy, "post.stream.1")["post.stream.1"]
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert "buffered, not streamed" in bad.detail and "reachable" in bad.detail
    assert "cannot reach" not in bad.detail
    assert "TTS-STREAM" in REGISTRY["post.stream.1"].clauses


def test_a_ping_that_says_ready_while_nothing_can_be_synthesized_is_an_sm_ping_fault() -> None:
    bad = judge(toys.PingLiesToy, "health.ping.ready.1")["health.ping.ready.1"]
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert "/ping answered 200 (ready) while the container cannot synthesize" in bad.detail
    assert list(REGISTRY["health.ping.ready.1"].clauses) == ["SM-PING"]
    fine = judge(good, "health.ping.ready.1")["health.ping.ready.1"]
    assert fine.verdict is Verdict.OK, fine.detail


def test_a_lock_that_a_short_message_can_race_fails_head_of_line_every_time() -> None:
    for _ in range(2):  # it passed by luck before: reliably now
        bad = judge(toys.RacyLockToy, "isolation.hol.1")["isolation.hol.1"]
        assert bad.verdict is Verdict.FAILED, bad.detail
        assert "head-of-line blocking" in bad.detail and "at A's first audio" in bad.detail
        assert "before A had any audio" in bad.detail  # the first try's race is said
    fine = judge(lambda: ToyContainer(toys.ToyConfig(realtime_factor=0.2)), "isolation.hol.1")["isolation.hol.1"]
    assert fine.verdict is Verdict.OK, fine.detail


def test_a_raced_lock_on_a_container_that_sends_a_message_whole_fails_head_of_line() -> None:
    """kokoro-cpu was NOT-JUDGED: B won the race at A's synthesis_start, and at A's first audio A was done.
    The second try's B now goes at most 1 s into A, while A is being made."""
    bad = judge(toys.RacyWholeLockToy, "isolation.hol.1")["isolation.hol.1"]
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert "head-of-line blocking" in bad.detail and "ms into A, before its first audio" in bad.detail


def test_a_stalled_post_reader_that_blocks_every_session_fails_the_post_slow_reader() -> None:
    bad = judge(toys.LockedPostToy, "isolation.slow_reader.2")["isolation.slow_reader.2"]
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert "stalled beside a POST /invocations whose response is not read" in bad.detail
    fine = judge(ToyContainer, "isolation.slow_reader.2")["isolation.slow_reader.2"]
    assert fine.verdict is Verdict.OK, fine.detail


@dataclass
class _Launched(Target):
    """A process toy the test started: the suite's process target, as far as the stop.* cases see."""

    pid: int | None = None


@contextmanager
def launched(*args: str) -> Iterator[_Launched]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.toys.sample_defects", "--port", str(port), *args],
                            cwd=Path(__file__).parents[2], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, 20.0, lambda _: None, lambda: proc.poll() is None, PingLog())
        yield _Launched(kind="process", base_url=url, pid=proc.pid)
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_work_that_outlives_its_client_is_named() -> None:
    with launched("--runaway") as target:
        bad = run_case(REGISTRY["stop.client.1"], target, FAST)
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert PROCESS_PROOFS["stop.client.1"] in bad.detail
    with launched() as target:
        fine = run_case(REGISTRY["stop.client.1"], target, FAST)
    assert fine.verdict is Verdict.OK, fine.detail


def test_work_that_outlives_its_client_is_named_when_a_message_comes_as_one_frame() -> None:
    """kokoro-cpu's shape: the whole message in one frame at its end. Leaving at the long message's own
    first audio left nothing behind (stop.client.1 said OK, "0% of a core ... 43.6 s after the client
    left"); leaving at a lead sentence's audio leaves the long message queued, and the toy makes it."""
    with launched("--runaway", "--whole") as target:
        bad = run_case(REGISTRY["stop.client.1"], target, FAST)
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert PROCESS_PROOFS["stop.client.1"] in bad.detail and "unmade" in bad.detail


def test_a_container_that_ignores_sigterm_fails_and_one_that_exits_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stop, "GRACE_S", 2.0)  # SageMaker's 30 s, shortened for the test
    with launched("--runaway") as target:
        bad = run_case(REGISTRY["stop.sigterm.1"], target, FAST)
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert PROCESS_PROOFS["stop.sigterm.1"] in bad.detail
    with launched() as target:
        fine = run_case(REGISTRY["stop.sigterm.1"], target, FAST)
    assert fine.verdict is Verdict.OK, fine.detail


def test_a_client_that_leaves_nothing_unmade_is_not_judged_never_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stop, "ABANDONED_CHARS", 40)  # one sentence behind the lead: nothing left to outlive
    with launched("--runaway") as target:
        result = run_case(REGISTRY["stop.client.1"], target, FAST)
    assert result.verdict is Verdict.NOT_JUDGED, result.detail
    assert "no situation to judge" in result.detail or "could not leave it unmade" in result.detail, result.detail


def test_a_sigterm_failure_says_when_another_case_left_work_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """vllm failed stop.sigterm.1 while it still relayed robust.size.1's 8 MB text (fresh, it exits in
    1.7 s): the failure stands (the container does not exit) and says what else it was doing."""
    monkeypatch.setattr(stop, "GRACE_S", 2.0)
    with launched("--runaway") as target:
        run_case(REGISTRY["stop.client.1"], target, FAST)  # leaves about 4 s of the toy's work running
        bad = run_case(REGISTRY["stop.sigterm.1"], target, FAST)
    assert bad.verdict is Verdict.FAILED, bad.detail
    assert "before this case it already used" in bad.detail and "work another case's client left" in bad.detail


def test_the_stop_cases_are_not_judged_where_the_suite_has_no_process() -> None:
    results = judge(good, "stop.client.1", "stop.sigterm.1")
    for result in results.values():
        assert result.verdict is Verdict.NOT_JUDGED, result.detail
        assert "did not start this container (a url target)" in result.detail


def test_the_sigterm_case_runs_last_whatever_is_selected() -> None:
    order = [c.id for c in selection.run_order(list(REGISTRY))]
    assert order[-1] == "stop.sigterm.1"
    picked = [c.id for c in selection.run_order([REGISTRY["stop.sigterm.1"], REGISTRY["robust.text.3"],
                                                 REGISTRY["health.ping.1"]])]
    assert picked == ["health.ping.1", "robust.text.3", "stop.sigterm.1"]


def test_in_a_run_the_lying_ping_is_blamed_once_on_sm_ping_not_on_the_ws_path() -> None:
    with ServerThread(toys.PingLiesToy().app()) as server:
        runner = SuiteRunner(Target(kind="url", base_url=server.url), FAST)
        ordered = selection.run_order([c for c in REGISTRY if c.id in ("health.path.1", "health.ping.ready.1")])
        results = {case.id: runner.run(case) for case in ordered}
    assert results["health.ping.ready.1"].verdict is Verdict.FAILED, results
    assert "/ping answered 200 (ready) while the container cannot synthesize" in results["health.ping.ready.1"].detail
    assert results["health.path.1"].verdict is Verdict.NOT_JUDGED, results["health.path.1"].detail
    assert "see health.ping.ready.1" in results["health.path.1"].detail


def test_sigterm_with_no_synthesis_running_is_not_judged_even_when_the_container_exits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stop, "SENTENCE", "")  # a blank message: refused at once, so nothing is being made
    with launched() as target:
        result = run_case(REGISTRY["stop.sigterm.1"], target, FAST)
    assert result.verdict is Verdict.NOT_JUDGED, result.detail
    assert "SIGTERM came with no synthesis running" in result.detail


def test_a_ready_ping_with_no_session_at_all_is_not_blamed_on_sm_ping() -> None:
    # /ping 200, and no WebSocket on the kokoro-sample route

    with ServerThread(OmniToy().app()) as server:
        result = run_case(REGISTRY["health.ping.ready.1"], Target(kind="url", base_url=server.url), FAST)
    assert result.verdict is Verdict.NOT_JUDGED, result.detail
    assert "cannot open a session" in result.detail and "health.accept.1's subject" in result.detail


def test_the_reference_container_exits_on_sigterm_without_cutting_its_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """stop.sigterm.1 also judges how the session ended (a message finished, or a close frame; never a cut):
    the reference container (timed backend, a real process) drains."""
    monkeypatch.setattr(stop, "GRACE_S", 20.0)
    container = LocalContainer(args=["--backend", "timed", "--timed-profile", "cpu-onnx-2core", "--log-level",
                                     "warning"])
    try:
        assert container.wait_ready(60, interval=0.1).ready
        target = _Launched(kind="process", base_url=container.url, pid=container.pid)
        result = run_case(REGISTRY["stop.sigterm.1"], target, FAST)
    finally:
        container.stop(grace=10)
    assert result.verdict is Verdict.OK, result.detail
    assert any(end in result.detail for end in ("the message finished", "closed the session with")), result.detail
