"""Issue 32: three wrong or missing blames found running the suite against the AWS sample's containers,
each shown on a toy (tests/toys/wrong_blame.py) with the old verdict or wording and the new one:

1. silence beside other sessions was blamed on isolation ("sessions got each other's audio");
2. a POST made whole before it is sent was "cannot reach the container: ReadTimeout";
3. health.busy.1's abandoned texts, 21st in the run, hid the next 69 cases of a container that does not
   stop abandoned work."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bidi_tts_conformance import selection
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import SuiteRunner, run_case
from bidi_tts_conformance.targets import Target
from tests.toys import wrong_blame as toys
from tests.toys.broken_session import SharedTextToy
from tests.toys.good import ServerThread, ToyContainer

FAST = Options(silence=1.5, case_timeout=30.0)
OLD_ISOLATION_BLAME = "got each other's audio"
OLD_POST_BLAME = "cannot reach the container"

pytestmark = pytest.mark.timeout(180)


def judge(make: Callable[[], ToyContainer], *case_ids: str, options: Options = FAST) -> dict[str, CaseResult]:
    with ServerThread(make().app()) as server:
        target = Target(kind="url", base_url=server.url)
        return {cid: run_case(REGISTRY[cid], target, options) for cid in case_ids}


def _shown(results: dict[str, CaseResult]) -> str:
    return "\n".join(f"  {cid}: {r.verdict} {r.detail[:300]}" for cid, r in results.items())


# -- 1. silence is not someone else's audio -------------------------------------------------------------
def test_sessions_with_no_audio_at_all_are_not_blamed_on_isolation() -> None:
    results = judge(toys.StartsThenMuteToy, "isolation.concurrent.1", "isolation.hol.1", "isolation.neighbour.1")
    shown = _shown(results)
    concurrent = results["isolation.concurrent.1"]
    assert concurrent.verdict is Verdict.NOT_JUDGED, shown
    assert "no audio on 3 of 3 concurrent sessions within 4.5 s" in concurrent.detail, shown
    assert "synthesis_start, then no audio" in concurrent.detail, shown
    assert OLD_ISOLATION_BLAME not in concurrent.detail, shown
    hol = results["isolation.hol.1"]
    assert hol.verdict is Verdict.NOT_JUDGED, shown
    assert "'Hi.' on a session alone, before any other session, failed" in hol.detail, shown
    neighbour = results["isolation.neighbour.1"]
    assert neighbour.verdict is Verdict.NOT_JUDGED, shown
    assert "a session alone after it failed too" in neighbour.detail, shown
    assert "beside a misbehaving one" in neighbour.detail and "does not serve even one session" in neighbour.detail


def test_audio_lengths_are_blamed_on_isolation_only_when_they_follow_the_texts_alone() -> None:
    constant = judge(toys.ConstantLengthToy, "isolation.concurrent.1")["isolation.concurrent.1"]
    assert constant.verdict is Verdict.NOT_JUDGED, constant.detail
    assert "does not follow the text lengths [3, 12, 89] even one session at a time" in constant.detail
    assert OLD_ISOLATION_BLAME not in constant.detail
    # The toy whose sessions really get each other's audio still fails, and now says it checked alone.
    shared = judge(SharedTextToy, "isolation.concurrent.1")["isolation.concurrent.1"]
    assert shared.verdict is Verdict.FAILED, shared.detail
    assert "while alone they do" in shared.detail and OLD_ISOLATION_BLAME in shared.detail
    fine = judge(ToyContainer, "isolation.concurrent.1")["isolation.concurrent.1"]
    assert fine.verdict is Verdict.OK, fine.detail


# -- 2. a POST made whole is reachable ------------------------------------------------------------------
def test_a_post_made_whole_slower_than_the_silence_is_judged_on_what_it_sends() -> None:
    """2.5 s a sentence, the status line included, against 1.5 s of silence allowed: the silence once
    ended the body's wait, and the three cases said the container could not be reached."""
    results = judge(toys.WholePostToy, "post.pcm.1", "post.wav.1", "post.errors.1", "post.stream.1")
    shown = _shown(results)
    assert not any(OLD_POST_BLAME in r.detail for r in results.values()), shown
    assert results["post.pcm.1"].verdict is Verdict.OK, shown
    assert results["post.wav.1"].verdict is Verdict.OK, shown
    assert results["post.errors.1"].verdict is Verdict.FAILED, shown  # it synthesizes format 'mp3'
    assert "format 'mp3': HTTP 200" in results["post.errors.1"].detail, shown
    assert results["post.stream.1"].verdict is Verdict.FAILED, shown
    assert "buffered, not streamed" in results["post.stream.1"].detail, shown


def test_a_post_that_never_sends_a_body_is_said_reachable() -> None:
    short = Options(silence=1.0, case_timeout=8.0)  # the body gets what is left of the 8 s, less 5 s
    silent = judge(toys.SilentPostToy, "post.pcm.1", "post.errors.1", options=short)
    shown = _shown(silent)
    assert not any(OLD_POST_BLAME in r.detail for r in silent.values()), shown
    assert silent["post.pcm.1"].verdict is Verdict.NOT_JUDGED, shown
    pcm = silent["post.pcm.1"].detail
    assert ("the container is reachable (took the connection and the request, then sent nothing, not even the "
            "status line; /ping answered 200) but sent no body for 44 characters of text") in pcm, pcm
    assert "post.stream.1's subject" in pcm
    assert silent["post.errors.1"].verdict is Verdict.FAILED, shown  # bad input must be answered
    assert silent["post.errors.1"].detail.startswith("not JSON: the container is reachable"), shown
    headers = judge(toys.HeadersOnlyPostToy, "post.wav.1", options=short)["post.wav.1"]
    assert headers.verdict is Verdict.NOT_JUDGED, headers.detail
    assert "answered HTTP 200, then sent no body" in headers.detail


# -- 3. abandoned work runs last ------------------------------------------------------------------------
RUN_LAST_BEFORE = ("cancel.1", "cancel.queued.1", "close.client.1", "stop.client.1", "errors.text_too_long.1",
                   "robust.size.1", "isolation.slow_reader.1", "isolation.slow_reader.2", "robust.text.3",
                   "stop.sigterm.1")
PICKED = ("health.ping.1", "frames.text.1", "health.busy.1", "audio.format.1", "audio.stream.1", "isolation.hol.1",
          "close.client.1")


def _run_in_plugin_order() -> dict[str, CaseResult]:
    toy = toys.NeverStopsToy()
    with ServerThread(toy.app()) as server:
        runner = SuiteRunner(Target(kind="url", base_url=server.url), FAST, calibrate_timeouts=False)
        try:
            return {case.id: runner.run(case) for case in selection.run_order([REGISTRY[c] for c in PICKED])}
        finally:
            toy.halt()


def test_abandoned_work_hides_only_the_cases_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    now = _run_in_plugin_order()
    shown = _shown(now)
    order = list(now)
    assert order.index("health.busy.1") > order.index("close.client.1"), order
    for cid in order[:order.index("close.client.1")]:
        assert now[cid].verdict is not Verdict.NOT_JUDGED, shown
    assert now["isolation.hol.1"].verdict is Verdict.FAILED, shown  # the toy's lock, judged now
    assert now["close.client.1"].verdict is Verdict.FAILED, shown
    # held behind the abandoned message past the silence allowed, or served late: either names it
    assert any(said in now["close.client.1"].detail for said in ("after a client left mid-message, a new session "
                                                                "failed", "waited for the abandoned message")), shown
    assert "still busy" not in now["health.busy.1"].detail, shown
    # The order before: health.busy.1 in its registry place, and the runaway hid the rest.
    monkeypatch.setattr(selection, "RUN_LAST", RUN_LAST_BEFORE)
    before = _run_in_plugin_order()
    shown = _shown(before)
    assert list(before).index("health.busy.1") == 2, shown
    assert "work that health.busy.1 left running" in before["audio.format.1"].detail, shown
    for cid in ("audio.stream.1", "isolation.hol.1", "close.client.1"):
        assert before[cid].verdict is Verdict.NOT_JUDGED, shown
        assert "health.busy.1's runaway" in before[cid].detail, shown


def test_frames_long_abandons_its_text_and_runs_after_the_cases_that_name_that() -> None:
    toy = toys.NeverStopsToy()
    with ServerThread(toy.app()) as server:
        try:
            result = run_case(REGISTRY["frames.long.1"], Target(kind="url", base_url=server.url), FAST)
        finally:
            toy.halt()
    assert result.verdict is Verdict.OK, result.detail
    assert result.left_work_running  # 35 of its 36 sentences left to a container that does not stop
    last = selection.RUN_LAST
    assert last[:2] == ("close.client.1", "stop.client.1")
    assert last.index("stop.client.1") < last.index("frames.long.1") < last.index("health.busy.1")
    assert last[-1] == "stop.sigterm.1"
