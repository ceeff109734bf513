"""audio.wrap.1 (TTS-AUDIO: loud audio clipped, never wrapped): FAILED with the sample's time on a toy that
converts loud float audio to int16 without clipping (tests/toys/wrapping.py, also in test_broken_toys.py's
table); OK on the same audio clipped, on quiet audio converted as carelessly, and on the reference
container (real Kokoro where its weights are here); NOT-JUDGED when no audio arrives. Any other case that
meets a wrapped sample notes it for audio.wrap.1."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bidi_tts.local_container import LocalContainer
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import Target
from tests.toys.good import ServerThread, ToyContainer
from tests.toys.wrapping import ClippingToy, QuietToy, WrappingToy

FAST = Options(silence=3.0, case_timeout=60.0)
WRAP = "audio.wrap.1"


def _on(make: Callable[[], ToyContainer], cid: str = WRAP, options: Options = FAST) -> CaseResult:
    with ServerThread(make().app()) as server:
        return run_case(REGISTRY[cid], Target(kind="url", base_url=server.url), options)


@pytest.mark.timeout(60)
def test_wrapped_loud_audio_fails_with_the_samples_time() -> None:
    result = _on(WrappingToy)
    assert result.verdict is Verdict.FAILED, result.detail
    assert "TTS-AUDIO: a wrapped sample at 0.087 s into the audio: -32545 then +32725" in result.detail, result.detail
    assert "instead of clipped at full scale" in result.detail


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make", [ClippingToy, QuietToy, ToyContainer], ids=["clipped", "quiet", "good"])
def test_clipped_or_quiet_audio_passes(make: Callable[[], ToyContainer]) -> None:
    result = _on(make)
    assert result.verdict is Verdict.OK, result.detail
    assert "no wrapped sample in" in result.detail


@pytest.mark.timeout(60)
def test_not_judged_when_no_audio_arrives() -> None:
    result = _on(WrappingToy, options=Options(voice="zz_absent", silence=3.0, case_timeout=60.0))
    assert result.verdict is Verdict.NOT_JUDGED, result.detail


@pytest.mark.timeout(60)
def test_another_case_notes_a_wrap_for_audio_wrap_1() -> None:
    result = _on(WrappingToy, "audio.sound.1")
    assert result.verdict is Verdict.OK, result.detail
    assert any("a wrapped sample at" in n and "(judged by audio.wrap.1)" in n for n in result.notes), result.notes


@pytest.mark.timeout(300)
def test_the_reference_container_with_real_kokoro_does_not_wrap() -> None:
    from tests.container.conftest import _missing_assets

    if reason := _missing_assets():
        pytest.skip(reason)
    container = LocalContainer(args=["--log-level", "warning"])
    try:
        assert container.wait_ready(240, interval=0.5).ready
        result = run_case(REGISTRY[WRAP], Target(kind="url", base_url=container.url),
                          Options(silence=30.0, case_timeout=240.0))
    finally:
        container.stop(grace=10)
    assert result.verdict is Verdict.OK, result.detail


@pytest.mark.timeout(60)
def test_a_wrapped_post_body_is_noted_for_audio_wrap_1() -> None:
    result = _on(WrappingToy, "post.pcm.1")
    assert result.verdict is Verdict.OK, result.detail
    assert any(n.startswith("TTS-AUDIO: the POST body has ") and "wrapped samples, the first at 0." in n
               and "(judged by audio.wrap.1)" in n for n in result.notes), result.notes
    clipped = _on(ClippingToy, "post.pcm.1")
    assert clipped.verdict is Verdict.OK and not any("wrapped" in n for n in clipped.notes), clipped.notes
