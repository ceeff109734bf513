"""errors.busy.2, post.busy.1 and post.capacity.1 (what a full container answers, and whether a POST gives
its place back): each FAILED on a toy with one mutant's change, for the reason its detail names; OK on a
correct toy with room for 3 and on the reference container (timed backend, --max-queue 4); NOT-JUDGED on a
container that was never full."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import Target
from tests.container.timed_server import timed_container
from tests.toys.admission import BusyPostWithoutMessageToy, BusyWithoutIdToy, LeakyPostToy, RoomToy
from tests.toys.good import ServerThread, ToyConfig, ToyContainer

FAST = Options(silence=3.0, case_timeout=90.0)
CASES = ("errors.busy.2", "post.busy.1", "post.capacity.1")

# case id -> the phrase its failure on its mutant names (test_broken_toys.PROVEN_ELSEWHERE reads this table)
FAILURE_PHRASES = {
    "errors.busy.2": "the busy error at admission carries request_id None",
    "post.busy.1": "a busy POST answered with no message for people",
    "post.capacity.1": "capacity leaks: POST 4 of 5",
}
MUTANTS: dict[str, Callable[[], ToyContainer]] = {
    "errors.busy.2": BusyWithoutIdToy, "post.busy.1": BusyPostWithoutMessageToy, "post.capacity.1": LeakyPostToy,
}


def _run(make: Callable[[], ToyContainer], case_ids: tuple[str, ...]) -> dict[str, CaseResult]:
    with ServerThread(make().app()) as server:
        target = Target(kind="url", base_url=server.url)
        return {cid: run_case(REGISTRY[cid], target, FAST) for cid in case_ids}


def _shown(results: dict[str, CaseResult]) -> str:
    return "\n".join(f"{cid}: {r.verdict}: {r.detail}" for cid, r in results.items())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case_id", CASES)
def test_each_fails_on_its_mutant_and_the_others_pass_there(case_id: str) -> None:
    results = _run(MUTANTS[case_id], CASES)
    phrase = FAILURE_PHRASES[case_id]
    assert results[case_id].verdict is Verdict.FAILED, _shown(results)
    assert phrase in results[case_id].detail, _shown(results)
    for other in CASES:
        if other != case_id:
            assert results[other].verdict is Verdict.OK, _shown(results)


@pytest.mark.timeout(120)
def test_a_correct_container_with_room_for_three_passes() -> None:
    results = _run(RoomToy, CASES)
    assert all(r.verdict is Verdict.OK for r in results.values()), _shown(results)
    assert "3 messages held" in results["errors.busy.2"].detail


@pytest.mark.timeout(180)
def test_not_judged_on_a_container_that_is_never_full() -> None:
    results = _run(lambda: ToyContainer(ToyConfig(realtime_factor=0.2)), CASES)
    assert all(r.verdict is Verdict.NOT_JUDGED for r in results.values()), _shown(results)
    assert "no message was refused busy with 24 sessions" in results["errors.busy.2"].detail


@pytest.mark.timeout(180)
def test_the_reference_container_passes_when_full() -> None:
    with timed_container("cpu-onnx-2core", "--max-queue", "4") as url:
        target = Target(kind="url", base_url=url)
        results = {cid: run_case(REGISTRY[cid], target, FAST) for cid in CASES}
    assert all(r.verdict is Verdict.OK for r in results.values()), _shown(results)
    assert "4 messages held" in results["errors.busy.2"].detail
