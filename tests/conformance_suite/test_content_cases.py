"""The content.* cases must FAIL speaking containers that say the wrong words, naming the cause, and pass
one that says the right ones (espeak-ng speech, heard by the offline Whisper base recognizer)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from bidi_tts_conformance.cases import REGISTRY, content
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import Verdict
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import Target
from bidi_tts_hearing import INSTALL_HINT, ModelUnavailable, unavailable_reason
from tests.toys import speaking
from tests.toys.good import ServerThread, ToyContainer

OPTIONS = Options(silence=10.0, case_timeout=120.0)
CONTENT_CASES = [c.id for c in REGISTRY.select(["content.*"])]

# toy -> ({case id: phrase its failure detail must contain}, case ids that must pass)
DEFECTS: dict[str, tuple[Callable[[], ToyContainer], dict[str, str], tuple[str, ...]]] = {
    "drops_sentence": (speaking.DropsSentenceToy, {"content.order.1": "sentence 2 ('The kitchen door is open.') "
                                                   "dropped"}, ("content.intelligible.1",)),
    "swaps_sentences": (speaking.SwapsSentencesToy, {"content.order.1": "sentences 2 and 3 swapped"}, ()),
    "repeats_previous": (speaking.RepeatsPreviousToy,
                         {"content.session.1": "message 2 of 3: the audio carries the words of message 1"},
                         ("content.order.1",)),
    "cross_talk": (speaking.CrossTalkSpeakingToy, {"content.concurrent.1": "the audio carries the words of session"},
                   ("content.session.1",)),
    "truncates_end": (speaking.TruncatesEndToy, {"content.order.1": "the end is truncated"}, ()),
    "wrong_words": (speaking.WrongWordsToy, {"content.intelligible.1": "wrong words: word error rate"}, ()),
}


def _needs_hearing() -> None:
    if not speaking.espeak_available():
        pytest.skip("needs espeak-ng (Debian package espeak-ng)")
    if reason := unavailable_reason():
        pytest.skip(reason)


@pytest.fixture(scope="module")
def good_speaker() -> Iterator[Target]:
    _needs_hearing()
    with ServerThread(speaking.SpeakingToy().app()) as server:
        yield Target(kind="url", base_url=server.url)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case_id", CONTENT_CASES)
def test_good_speaking_toy_passes(good_speaker: Target, case_id: str) -> None:
    result = run_case(REGISTRY[case_id], good_speaker, OPTIONS)
    assert result.verdict is Verdict.OK, f"{case_id}: {result.verdict}: {result.detail}"


@pytest.fixture(params=sorted(DEFECTS), ids=str)
def defect(request: pytest.FixtureRequest) -> Iterator[tuple[dict[str, str], tuple[str, ...], Target]]:
    _needs_hearing()
    toy, failed, passed = DEFECTS[request.param]
    with ServerThread(toy().app()) as server:
        yield failed, passed, Target(kind="url", base_url=server.url)


@pytest.mark.timeout(300)
def test_defective_speaker_fails_the_right_case_naming_the_cause(
        defect: tuple[dict[str, str], tuple[str, ...], Target]) -> None:
    failed, passed, target = defect
    for case_id, phrase in failed.items():
        result = run_case(REGISTRY[case_id], target, OPTIONS)
        assert result.verdict is Verdict.FAILED, f"{case_id} should fail: {result.verdict}: {result.detail}"
        assert phrase in result.detail, f"{case_id}: detail should name {phrase!r}: {result.detail}"
    for case_id in passed:
        result = run_case(REGISTRY[case_id], target, OPTIONS)
        assert result.verdict is Verdict.OK, f"{case_id} should pass: {result.verdict}: {result.detail}"


@pytest.mark.timeout(60)
def test_tones_are_not_speech() -> None:
    """A container that streams loud, plausibly long tones passes audio.sound.1 but not content.*."""
    if reason := unavailable_reason():
        pytest.skip(reason)
    with ServerThread(ToyContainer().app()) as server:
        result = run_case(REGISTRY["content.intelligible.1"], Target(kind="url", base_url=server.url), OPTIONS)
    assert result.verdict is Verdict.FAILED and "wrong words" in result.detail, result.detail


def test_cases_skip_with_an_install_hint_without_a_recognizer(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise ModelUnavailable(f"faster-whisper is not installed; {INSTALL_HINT}")

    monkeypatch.setattr(content, "recognizer", missing)
    result = run_case(REGISTRY["content.order.1"], Target(kind="url", base_url="http://127.0.0.1:9"), OPTIONS)
    assert result.verdict is Verdict.SKIPPED
    assert "uv sync --extra hearing" in result.detail  # from a checkout; a wheel's hint names the wheel


@pytest.mark.timeout(120)
def test_suite_imports_and_content_cases_skip_without_the_hearing_extra() -> None:
    """`pip install 'bidi-tts[conformance]'` alone: every other case still runs; content.* says how to install."""
    script = (
        "import sys\n"
        "for m in ('jiwer', 'num2words', 'faster_whisper'): sys.modules[m] = None\n"
        "from bidi_tts_conformance.cases import REGISTRY\n"
        "from bidi_tts_conformance.context import Options\n"
        "from bidi_tts_conformance.runner import run_case\n"
        "from bidi_tts_conformance.targets import Target\n"
        "r = run_case(REGISTRY['content.order.1'], Target(kind='url', base_url='http://127.0.0.1:9'), Options())\n"
        "print(r.verdict, r.detail)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("SKIPPED no speech recognizer: jiwer is not installed"), proc.stdout
    assert "uv sync --extra hearing" in proc.stdout
