"""The post.* conformance cases on a SageMaker endpoint: through InvokeEndpointWithResponseStream
(boto3 -> the stand-in -> the container's POST /invocations), passing on a good container and
failing, for the reason they name, on a broken one."""

from __future__ import annotations

from pathlib import Path

import pytest

from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.model import Verdict
from bidi_tts_conformance.runner import run_case, unmet_requirement
from bidi_tts_conformance.targets import SageMakerEndpointTarget
from tests.conformance_suite.test_broken_toys import FAST, _sagemaker_target, _shown
from tests.toys import broken, broken_session
from tests.toys.good import ServerThread, ToyContainer

pytestmark = [pytest.mark.timeout(120), pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]
# post.busy.1 and post.capacity.1 fill the container over direct WebSocket sessions, then POST over plain HTTP:
# they do not run on an endpoint (tests/conformance_suite/test_admission_cases.py proves them).
DIRECT_ONLY = ("post.busy.1", "post.capacity.1")
POST_CASES = [case for case in REGISTRY.select(["post.*"]) if case.id not in DIRECT_ONLY]


def test_post_cases_run_on_an_endpoint_target() -> None:
    target = SageMakerEndpointTarget(endpoint_name="e")
    assert len(POST_CASES) == 4
    assert all(unmet_requirement(case, target) is None for case in POST_CASES)
    assert all(unmet_requirement(REGISTRY[cid], target) is not None for cid in DIRECT_ONLY)


def test_good_toy_passes_the_post_cases_through_the_response_stream(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    with ServerThread(ToyContainer().app()) as server, _sagemaker_target(server.url, monkeypatch, tmp_path) as target:
        results = {case.id: run_case(case, target, FAST) for case in POST_CASES}
    assert all(r.verdict is Verdict.OK for r in results.values()), _shown(results)


@pytest.mark.parametrize(("toy", "case_id", "phrase"), [
    (broken.PostErrors500Toy, "post.errors.1", "HTTP 500"),
    (broken_session.PostBufferedToy, "post.stream.1", "the response is buffered, not streamed"),
    (broken_session.PostSizedWavToy, "post.wav.1", "a streamed WAV uses 0xFFFFFFFF"),
    (broken_session.PostOctetStreamToy, "post.pcm.1", "Content-Type 'application/octet-stream'"),
])
def test_broken_post_fails_its_case_through_the_response_stream(
        toy: type[ToyContainer], case_id: str, phrase: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    with ServerThread(toy().app()) as server, _sagemaker_target(server.url, monkeypatch, tmp_path) as target:
        result = run_case(REGISTRY[case_id], target, FAST)
    assert result.verdict is Verdict.FAILED, _shown({case_id: result})
    assert phrase in result.detail, _shown({case_id: result})


def test_without_boto3_the_post_cases_skip_saying_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_boto3(name: str, *args: object, **kwargs: object) -> object:
        if name == "boto3" or name.startswith("botocore"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_boto3)
    target = SageMakerEndpointTarget(endpoint_name="e", endpoint_url="https://127.0.0.1:9")
    result = run_case(REGISTRY["post.pcm.1"], target, FAST)
    assert result.verdict is Verdict.SKIPPED, _shown({"post.pcm.1": result})
    assert "needs boto3" in result.detail and "'sagemaker' extra" in result.detail
