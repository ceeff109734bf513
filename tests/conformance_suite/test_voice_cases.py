"""voice.path.1 and voice.prompt.1 (TTS-VOICE): each FAILED on a toy that trusts the voice field, for the
reason its detail names; OK on a toy and on the reference container that refuse with `unknown_voice`;
NOT-JUDGED where the real voice itself is not served (no id can land on it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import Target
from bidi_tts_hearing import unavailable_reason
from tests.container.timed_server import timed_container
from tests.toys import speaking
from tests.toys.broken import AcceptAnyVoiceToy
from tests.toys.good import ServerThread, ToyContainer
from tests.toys.voices import PathVoiceToy, PromptVoiceToy

FAST = Options(silence=3.0, case_timeout=60.0)
HEARING = Options(silence=10.0, case_timeout=120.0)
VOICE_CASES = ("voice.path.1", "voice.prompt.1")

# case id -> the phrase its failure on its toy names (test_broken_toys.PROVEN_ELSEWHERE reads this table)
FAILURE_PHRASES = {
    "voice.path.1": "the voice id was resolved as a path",
    "voice.prompt.1": "the voice id reached what is spoken",
}


def _run(make: Callable[[], ToyContainer], case_ids: tuple[str, ...], options: Options = FAST) -> dict[str, CaseResult]:
    with ServerThread(make().app()) as server:
        target = Target(kind="url", base_url=server.url)
        return {cid: run_case(REGISTRY[cid], target, options) for cid in case_ids}


def _shown(results: dict[str, CaseResult]) -> str:
    return "\n".join(f"{cid}: {r.verdict}: {r.detail}" for cid, r in results.items())


@pytest.mark.timeout(60)
def test_a_container_that_resolves_the_voice_as_a_path_fails_voice_path() -> None:
    results = _run(PathVoiceToy, VOICE_CASES)
    path = results["voice.path.1"]
    assert path.verdict is Verdict.FAILED, _shown(results)
    assert FAILURE_PHRASES["voice.path.1"] in path.detail, path.detail
    assert "'x/../af_heart'" in path.detail and "'../voices/af_heart'" in path.detail, path.detail
    # Judged on what it is about: ids carrying words land on no file there, and are refused.
    assert results["voice.prompt.1"].verdict is Verdict.OK, _shown(results)


@pytest.mark.timeout(60)
def test_a_container_that_takes_any_voice_fails_both_for_that_not_for_paths() -> None:
    results = _run(AcceptAnyVoiceToy, VOICE_CASES)
    assert all(r.verdict is Verdict.FAILED for r in results.values()), _shown(results)
    assert "the container takes any voice" in results["voice.path.1"].detail, _shown(results)
    assert "resolved as a path" not in results["voice.path.1"].detail
    assert "a voice outside the allow-list was accepted" in results["voice.prompt.1"].detail, _shown(results)
    assert "reached what is spoken" not in results["voice.prompt.1"].detail  # tones say nothing


@pytest.mark.timeout(300)
def test_a_container_that_speaks_what_the_voice_carries_fails_voice_prompt() -> None:
    if not speaking.espeak_available():
        pytest.skip("needs espeak-ng (Debian package espeak-ng)")
    if reason := unavailable_reason():
        pytest.skip(reason)
    results = _run(PromptVoiceToy, VOICE_CASES, HEARING)
    prompt = results["voice.prompt.1"]
    assert prompt.verdict is Verdict.FAILED, _shown(results)
    assert FAILURE_PHRASES["voice.prompt.1"] in prompt.detail, prompt.detail
    assert results["voice.path.1"].verdict is Verdict.OK, _shown(results)


@pytest.mark.timeout(60)
def test_a_container_with_an_allow_list_passes_both() -> None:
    results = _run(ToyContainer, VOICE_CASES)
    assert all(r.verdict is Verdict.OK for r in results.values()), _shown(results)
    assert "voice './af_heart': error unknown_voice" in results["voice.path.1"].detail


@pytest.mark.timeout(60)
def test_not_judged_when_the_real_voice_is_not_served() -> None:
    """--voice names a voice the container lacks: no path lands on it, so nothing could be judged, even on
    a container that resolves paths."""
    results = _run(PathVoiceToy, VOICE_CASES, Options(voice="zz_absent", silence=3.0, case_timeout=60.0))
    assert all(r.verdict is Verdict.NOT_JUDGED for r in results.values()), _shown(results)
    assert "'zz_absent' itself was not synthesized" in results["voice.path.1"].detail


@pytest.mark.timeout(90)
def test_the_reference_container_refuses_every_such_voice() -> None:
    with timed_container("cpu-onnx-2core") as url:
        target = Target(kind="url", base_url=url)
        results = {cid: run_case(REGISTRY[cid], target, FAST) for cid in VOICE_CASES}
    assert all(r.verdict is Verdict.OK for r in results.values()), _shown(results)
