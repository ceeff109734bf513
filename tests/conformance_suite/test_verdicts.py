"""The suite's verdicts as a container author meets them: the whole suite, run as the plugin runs it
(calibrated timeouts, quiet-container probes), against containers with one known defect.

- one deviation fails the cases about it and is a note everywhere else (no masking);
- a case that follows a runaway says so instead of blaming itself;
- the timeouts come from the container: a slow one gets longer, a silent one fails in seconds.
"""

from __future__ import annotations

import asyncio

import pytest
from starlette.websockets import WebSocket

from bidi_tts_conformance.calibration import FLOOR_S, calibrate
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import SuiteRunner
from bidi_tts_conformance.targets import Target
from tests.toys import broken, samples
from tests.toys.good import ServerThread, ToyConfig, ToyContainer


def run_suite(toy: ToyContainer, globs: list[str] | None = None) -> tuple[SuiteRunner, dict[str, CaseResult]]:
    """Every case but content.* (these toys speak in tones; test_content_cases.py has speaking ones)."""
    with ServerThread(toy.app()) as server:
        runner = SuiteRunner(Target(kind="url", base_url=server.url), Options())
        results = {case.id: runner.run(case) for case in REGISTRY.select(globs) if case.group != "content"}
    return runner, results


def failed(results: dict[str, CaseResult]) -> set[str]:
    return {cid for cid, r in results.items() if r.verdict is Verdict.FAILED}


@pytest.mark.timeout(240)
def test_a_container_that_never_completes_fails_only_the_cases_about_completion() -> None:
    runner, results = run_suite(broken.NoCompleteToy())
    assert failed(results) == {"audio.order.1", "audio.consistent.1", "session.pipelined.1",
                               "close.synthesizing.1"}, {c: results[c].detail for c in failed(results)}
    assert "no synthesis_complete" in results["audio.order.1"].detail
    # Elsewhere the deviation is a note naming the case that judges it.
    assert any("judged by audio.order.1" in note for note in results["session.multi.3"].notes)
    assert runner.calibration is not None and runner.calibration.end_silence is not None


@pytest.mark.timeout(240)
def test_the_sample_shape_fails_on_its_two_defects_and_nowhere_else() -> None:
    """The AWS post's sample: no sample_rate in synthesis_start, every session behind one lock. Once
    37 cases failed on the first; frames.binary.1 and audio.binary.1 said things that were untrue.
    The lock shows twice, as head-of-line blocking and as a reader that stalls everyone."""
    _, results = run_suite(samples.SampleLikeToy())
    assert failed(results) == {"audio.format.1", "isolation.hol.1", "isolation.slow_reader.1"}, {
        c: results[c].detail for c in failed(results)}
    assert "sample_rate missing" in results["audio.format.1"].detail
    assert "head-of-line blocking" in results["isolation.hol.1"].detail
    for cid in ("frames.binary.1", "audio.binary.1"):
        assert results[cid].verdict is Verdict.OK
        assert any("without a valid sample_rate" in note for note in results[cid].notes), results[cid].notes


@pytest.mark.timeout(240)
def test_a_case_after_a_runaway_says_so() -> None:
    """A container that accepts 200,000 characters and synthesizes them after the client has gone:
    robust.text.3 fails for it; the next case waits (bounded) and then is NOT-JUDGED naming it, and the
    one after that too, without another wait (test_no_vacuous.py times it)."""
    _, results = run_suite(samples.RunawayToy(), ["robust.text.*", "robust.size.1", "robust.voice.1"])
    assert results["robust.text.3"].verdict is Verdict.FAILED
    assert "200,000 characters of text: the message was accepted" in results["robust.text.3"].detail
    after = results["robust.size.1"]
    assert after.verdict is Verdict.NOT_JUDGED, after
    assert "work that robust.text.3 left running" in after.detail, after
    assert results["robust.voice.1"].verdict is Verdict.NOT_JUDGED
    assert "robust.text.3's runaway (see robust.size.1)" in results["robust.voice.1"].detail


@pytest.mark.timeout(120)
def test_a_slow_container_gets_a_longer_timeout_and_passes() -> None:
    slow = ToyContainer(ToyConfig(first_audio_delay_s=0.6, realtime_factor=0.3))
    runner, results = run_suite(slow, ["frames.*", "audio.order.1", "session.multi.1", "close.*"])
    assert runner.options.silence >= 4 * 0.6
    assert not failed(results), {c: results[c].detail for c in failed(results)}


class SilentToy(ToyContainer):
    """Accepts the WebSocket, then never answers anything."""

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        while (await ws.receive())["type"] != "websocket.disconnect":
            pass


def test_a_silent_container_is_calibrated_to_the_floor() -> None:
    with ServerThread(SilentToy().app()) as server:
        calibration = asyncio.run(calibrate(Target(kind="url", base_url=server.url), "af_heart", 24_000,
                                            first_answer_s=1.0))
    assert calibration.silence == FLOOR_S
    assert calibration.problem == "no answer to a short message"
    assert "calibration failed (no answer to a short message)" in calibration.summary()
