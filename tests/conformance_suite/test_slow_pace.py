"""Issue 32: a container that got slower after the calibration is not failed for its pace.

A case that failed only on silence is re-checked with a 'Hi.' probe: slower than at the start, the run
recalibrates and retries the case once (OK here, and saying so); as quick as at the start, the failure
stands, at the cost of one probe. Toys: tests/toys/slow_pace.py (their delays are made up).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from bidi_tts_conformance import runner as runner_module
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.driver import Conversation
from bidi_tts_conformance.failures import CaseFailed, silence_behind
from bidi_tts_conformance.model import Case, CaseResult, Verdict
from bidi_tts_conformance.runner import SuiteRunner
from bidi_tts_conformance.targets import Target
from tests.toys.good import ServerThread, ToyContainer
from tests.toys.slow_pace import AnswersOnlyCalibrationToy, SlowsDownToy

CASES = ("audio.order.1", "frames.short.1", "session.multi.1")  # the first fails on the old silence
OLD_BLAME = "nothing arrived for 2.0 s"

pytestmark = pytest.mark.timeout(120)


def run_suite(toy: ToyContainer, case_ids: tuple[str, ...], progress: list[str] | None = None,
              **runner_options: bool) -> tuple[dict[str, CaseResult], SuiteRunner]:
    lines = progress if progress is not None else []
    with ServerThread(toy.app()) as server:
        runner = SuiteRunner(Target(kind="url", base_url=server.url), Options(), progress=lines.append,
                             **runner_options)
        return {cid: runner.run(REGISTRY[cid]) for cid in case_ids}, runner


def _shown(results: dict[str, CaseResult]) -> str:
    return "\n".join(f"  {cid}: {r.verdict} ({r.duration_s:.1f} s) {r.detail[:400]}" for cid, r in results.items())


def test_a_container_that_slowed_after_the_calibration_is_retried_and_passes() -> None:
    toy, progress = SlowsDownToy(), list[str]()
    results, runner = run_suite(toy, CASES, progress)
    shown = _shown(results) + "\n" + "\n".join(progress)
    assert "silence allowed while a frame is due 2.0 s" in progress[0], shown  # calibrated on the quick toy
    assert toy.delayed >= len(CASES), shown  # the slowdown happened to every case
    assert all(r.verdict is Verdict.OK for r in results.values()), shown
    first = results["audio.order.1"].detail
    assert "retried once" in first and OLD_BLAME in first, shown  # the first try's failure, quoted
    assert "(its session's opening included) against" in first and "silence allowed now" in first, shown
    assert len(runner.recalibrations) == 1 and runner.options.silence > 2.4, shown
    # the later cases ran on the new silence at once: no failure, no retry
    assert not any("retried" in results[cid].detail for cid in CASES[1:]), shown
    assert any("recalibrated: silence allowed now" in line and "cases after it" in line for line in progress), shown
    assert runner.timeouts()["silence_allowed_from"].startswith("recalibrated 1x"), shown


@pytest.mark.parametrize("case_id", ["audio.binary.1", "audio.sound.1", "audio.samples.1", "health.ping.ready.1"])
def test_a_case_that_judges_what_arrived_is_retried_when_too_little_arrived_for_the_pace(case_id: str) -> None:
    """These read leniently and raise their own failure ("no BINARY audio frame at all", "the audio is
    silent (RMS 0.0 ...)", "/ping 200 ... 'Hi.' got no audio"): one behind a silence is re-checked too."""
    results, runner = run_suite(SlowsDownToy(), (case_id,))
    result = results[case_id]
    assert result.verdict is Verdict.OK, _shown(results)
    assert "retried once" in result.detail and len(runner.recalibrations) == 1, _shown(results)


def _as_before(self: SuiteRunner, case: Case, failed: CaseResult) -> CaseResult:
    return failed  # the runner before issue 32's fix: a failure on silence was final


def test_before_the_fix_the_slowed_container_failed_on_its_clause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SuiteRunner, "_unless_slowed", _as_before)
    results, _ = run_suite(SlowsDownToy(), ("audio.order.1",))
    assert results["audio.order.1"].verdict is Verdict.FAILED, _shown(results)
    assert OLD_BLAME in results["audio.order.1"].detail, _shown(results)


def test_a_container_quick_on_hi_that_never_answers_the_case_still_fails_fast() -> None:
    toy = AnswersOnlyCalibrationToy()
    picked = ("audio.order.1", "session.multi.1")
    results, runner = run_suite(toy, picked)
    shown = _shown(results)
    assert toy.ignored >= len(picked), shown
    for cid in picked:
        assert results[cid].verdict is Verdict.FAILED, shown
        assert OLD_BLAME in results[cid].detail and "as quick as at the start" in results[cid].detail, shown
        assert "retried" not in results[cid].detail, shown
        assert results[cid].duration_s < 6.0, shown  # the silence allowed, then one quick probe
    assert runner.recalibrations == [] and runner.options.silence == 2.0, shown


def test_a_probe_slowed_by_the_cases_own_work_costs_a_retry_and_the_case_still_fails() -> None:
    toy = AnswersOnlyCalibrationToy(holds_s=3.5)  # the lock is held until 1.5 s after the case gave up
    results, runner = run_suite(toy, ("audio.order.1",))
    result, shown = results["audio.order.1"], _shown(results)
    assert result.verdict is Verdict.FAILED and "retried once" in result.detail, shown
    assert OLD_BLAME in result.detail and "no answer (no synthesis_start" in result.detail, shown  # both tries
    assert len(runner.recalibrations) == 1 and result.duration_s < 20.0, shown


def test_past_the_runs_recalibrations_a_slowed_container_is_not_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "MAX_RECALIBRATIONS", 0)
    results, runner = run_suite(SlowsDownToy(), ("audio.order.1",))
    result = results["audio.order.1"]
    assert result.verdict is Verdict.NOT_JUDGED, _shown(results)
    assert "recalibrations are spent" in result.detail and OLD_BLAME in result.detail, _shown(results)
    assert runner.recalibrations == [], _shown(results)


def test_a_silence_set_by_hand_is_not_recalibrated() -> None:
    started = time.perf_counter()
    with ServerThread(SlowsDownToy().app()) as server:
        runner = SuiteRunner(Target(kind="url", base_url=server.url), Options(silence=2.0), calibrate_timeouts=False)
        result = runner.run(REGISTRY["audio.order.1"])
    assert result.verdict is Verdict.FAILED and OLD_BLAME in result.detail, result.detail
    assert runner.recalibrations == [] and time.perf_counter() - started < 10.0


def _raise_in(wrap: Callable[[CaseFailed], CaseFailed]) -> CaseFailed:
    try:
        try:
            raise CaseFailed("no answer: nothing arrived for 2.0 s; received: no frame at all", silence_s=2.0)
        except CaseFailed as exc:
            raise wrap(exc) from None
    except CaseFailed as outer:
        return outer


def test_only_a_failure_that_rewords_a_silence_counts_as_one() -> None:
    reworded = _raise_in(lambda exc: CaseFailed(f"message 1 of 2 failed: {exc.detail}"))
    assert silence_behind(reworded) == 2.0
    other_blame = _raise_in(lambda exc: CaseFailed("after cancel the session was unusable"))
    assert silence_behind(other_blame) is None
    assert silence_behind(CaseFailed("synthesis_start says sample_rate 16000")) is None


def test_no_audio_after_a_silence_is_marked_as_a_silence_and_other_failures_are_not() -> None:
    async def say_hi(conv_silence: float) -> CaseFailed:
        with ServerThread(SlowsDownToy(delay_s=1.0, quick_messages=0).app()) as server:
            transport = await Target(kind="url", base_url=server.url).connect(open_timeout=5.0)
            conv = Conversation(transport, silence=conv_silence, voice="af_heart", sample_rate=24000)
            try:
                await conv.say("Hi.", lenient=True)
            except CaseFailed as exc:
                return exc
            finally:
                await conv.close()
        raise AssertionError("'Hi.' was answered within the silence")

    failed = asyncio.run(say_hi(0.4))
    assert failed.detail.startswith("no audio") and failed.silence_s == 0.4, failed.detail
    assert CaseFailed("a valid message was refused with error internal").silence_s is None
