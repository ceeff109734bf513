"""The suite in the vllm-omni dialect (--dialect vllm-omni) against the vLLM-Omni toys.

The good toy (tests/toys/omni_good.py, a stand-in for vLLM-Omni's streaming speech handler with
tones) passes the core cases; a case that only makes sense in kokoro-sample is NOT-JUDGED with its
reason and without touching the container; the toy that reads with receive_text(), as vLLM-Omni's
handler does, fails frames.binary.1 (SM-FRAMES-IN) and still passes frames.text.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bidi_tts.dialects import dialect_named
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.dialect_scope import NOT_JUDGED_IN, not_judged_because
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import Target
from tests.toys.good import ServerThread, ToyConfig
from tests.toys.omni_broken import (
    OmniBase64AudioToy,
    OmniBaseToy,
    OmniCloseAfterFlushToy,
    OmniDropsBufferToy,
    OmniNoAudioDoneToy,
    OmniTextOnlyToy,
)
from tests.toys.omni_good import OmniToy, TextOnlyOmniToy

ROOT = Path(__file__).resolve().parents[2]
OMNI = Options(silence=1.5, case_timeout=30.0, dialect="vllm-omni")
PACED = ToyConfig(realtime_factor=0.05)  # 1 s of audio in 50 ms, so streaming and close cases see work running
CORE = ("audio.order.1", "audio.binary.1", "audio.samples.1", "audio.format.1", "audio.stream.1", "audio.speed.1",
        "frames.binary.1", "frames.text.1", "frames.fragmented.1", "frames.fragmented.2", "session.multi.2",
        "session.pipelined.1", "close.explicit.1", "close.explicit.2", "close.synthesizing.1",
        "isolation.concurrent.1")


def omni_target(url: str) -> Target:
    return Target(kind="url", base_url=url, dialect=dialect_named("vllm-omni"))


def run(case_id: str, target: Target, options: Options = OMNI) -> CaseResult:
    return run_case(REGISTRY[case_id], target, options)


@pytest.fixture(scope="module")
def good_omni() -> Iterator[str]:
    with ServerThread(OmniToy(PACED).app()) as server:
        yield server.url


@pytest.fixture(scope="module")
def text_only_omni() -> Iterator[str]:
    with ServerThread(TextOnlyOmniToy(PACED).app()) as server:
        yield server.url


@pytest.mark.parametrize("case_id", CORE)
def test_core_cases_pass_on_the_good_vllm_omni_toy(good_omni: str, case_id: str) -> None:
    result = run(case_id, omni_target(good_omni))
    assert result.verdict is Verdict.OK, result.detail


def test_the_toy_heard_only_vllm_omni_messages(good_omni: str) -> None:
    toy = OmniToy(PACED)
    with ServerThread(toy.app()) as server:
        assert run("frames.text.1", omni_target(server.url)).verdict is Verdict.OK
    assert toy.frames_received and set(toy.frames_received) == {"text"}


def test_the_case_trace_records_the_dialects_wire(good_omni: str) -> None:
    result = run("frames.text.1", omni_target(good_omni))
    assert result.trace is not None
    previews = " ".join(event.preview for event in result.trace.events)
    for wire_type in ("session.config", "input.text", "input.done", "audio.start", "audio.done", "session.done"):
        assert wire_type in previews, wire_type
    assert "synthesis_start" not in previews  # the translation is the client's, not what the container sent


@pytest.mark.parametrize("case_id", ["cancel.1", "errors.unknown_voice.1", "post.pcm.1", "audio.rate.1",
                                     "session.request_id.1"])
def test_kokoro_sample_only_cases_are_not_judged_with_the_reason(case_id: str) -> None:
    nowhere = omni_target("http://127.0.0.1:9")  # never reached: the table answers first
    result = run(case_id, nowhere)
    assert result.verdict is Verdict.NOT_JUDGED
    assert result.detail.startswith("not judged in the vllm-omni dialect: ")
    assert result.detail == not_judged_because(case_id, "vllm-omni")


def test_every_entry_of_the_table_names_a_case_and_a_reason() -> None:
    ids = [case.id for case in REGISTRY]
    for dialect, entries in NOT_JUDGED_IN.items():
        assert dialect in ("kokoro-sample", "vllm-omni")
        for glob, why in entries:
            assert any(not_judged_because(i, dialect) for i in ids if __import__("fnmatch").fnmatchcase(i, glob)), glob
            assert len(why) > 20


def test_no_case_is_out_of_scope_in_kokoro_sample() -> None:
    assert all(not_judged_because(case.id, "kokoro-sample") is None for case in REGISTRY)


def test_a_receive_text_server_fails_frames_binary_on_sm_frames_in(text_only_omni: str) -> None:
    target = omni_target(text_only_omni)
    binary = run("frames.binary.1", target)
    assert binary.verdict is Verdict.FAILED
    # refused with an error or dropped (the handler ends either way): both are the BINARY frame not served
    assert "binary frame not handled" in binary.detail and "in a BINARY frame:" in binary.detail
    assert "SM-FRAMES-IN" in REGISTRY["frames.binary.1"].clauses
    assert run("frames.text.1", target).verdict is Verdict.OK  # the same message as TEXT is served


def test_the_kokoro_sample_dialect_against_a_vllm_omni_toy_finds_no_route(good_omni: str) -> None:
    kokoro = Target(kind="url", base_url=good_omni)  # default dialect: /invocations-bidirectional-stream
    result = run("frames.text.1", kokoro, Options(silence=1.5, case_timeout=30.0))
    assert result.verdict is Verdict.FAILED and "cannot open a session" in result.detail


def run_suite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "conformance/test_cases.py", "-p", "no:cacheprovider",
                           "--reply-timeout", "3", *args], cwd=ROOT, capture_output=True, text=True, timeout=180,
                          check=False, env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.mark.timeout(200)
def test_pytest_conformance_dialect_vllm_omni_end_to_end(good_omni: str, text_only_omni: str,
                                                         tmp_path: Path) -> None:
    report = tmp_path / "omni.json"
    cases = ["--case", "frames.binary.1", "--case", "audio.order.1", "--case", "cancel.1"]
    good = run_suite("--container-url", good_omni, "--dialect", "vllm-omni", *cases,
                     "--conformance-report", str(report))
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-1000:]
    document = json.loads(report.read_text())
    assert document["target"]["dialect"] == "vllm-omni"
    verdicts = {e["id"]: e["verdict"] for e in document["cases"]}
    assert verdicts == {"frames.binary.1": "OK", "audio.order.1": "OK", "cancel.1": "NOT-JUDGED"}
    broken = run_suite("--container-url", text_only_omni, "--dialect", "vllm-omni", *cases)
    assert broken.returncode == 1 and "frames.binary.1" in broken.stdout


def test_an_unknown_dialect_is_a_usage_error() -> None:
    proc = run_suite("--container-url", "http://127.0.0.1:9", "--dialect", "openai")
    assert proc.returncode == 4
    assert "invalid choice: 'openai'" in proc.stderr


@pytest.fixture
def aws_stand_in_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    from tests.sagemaker.helpers import use_dummy_aws_credentials

    use_dummy_aws_credentials(monkeypatch, tmp_path)
    return tmp_path / "certs"


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("toy, binary_verdict", [(OmniToy, Verdict.OK), (TextOnlyOmniToy, Verdict.FAILED)])
def test_over_sagemaker_the_dialects_path_travels_in_the_invocation_path_header(
        toy: type[OmniToy], binary_verdict: Verdict, aws_stand_in_env: Path) -> None:
    from bidi_tts_conformance.targets import SageMakerEndpointTarget
    from tests.sagemaker.helpers import start_gateway

    with ServerThread(toy(PACED).app()) as server, start_gateway(server.url, aws_stand_in_env) as gateway:
        target = SageMakerEndpointTarget(endpoint_name="toy", endpoint_url=gateway.url, ca_file=gateway.ca_file,
                                         dialect=dialect_named("vllm-omni"))
        # The stand-in routes by X-Amzn-SageMaker-Model-Invocation-Path; the toy has no default route.
        assert run("audio.order.1", target).verdict is Verdict.OK
        binary = run("frames.binary.1", target)
        without_header = SageMakerEndpointTarget(endpoint_name="toy", endpoint_url=gateway.url,
                                                 ca_file=gateway.ca_file)  # kokoro-sample: the default route
        assert run("frames.text.1", without_header, Options(silence=1.5, case_timeout=30.0)).verdict is Verdict.FAILED
    assert binary.verdict is binary_verdict, binary.detail


# Each toy of tests/toys/omni_broken.py (one rule of the dialect broken), the case that must fail on it,
# and a phrase of the failure detail that names the cause.
BROKEN_OMNI: dict[str, tuple[type[OmniBaseToy], str, str]] = {
    "reads text frames only": (OmniTextOnlyToy, "frames.binary.1", "binary frame not handled"),
    "closes after session.done": (OmniCloseAfterFlushToy, "session.multi.1", "1000"),
    "no audio.done": (OmniNoAudioDoneToy, "audio.order.1", "before audio.done of sentences [0]"),
    "audio inside JSON": (OmniBase64AudioToy, "audio.binary.1", "audio inside a JSON control frame"),
    "a flush drops buffered text": (OmniDropsBufferToy, "isolation.concurrent.1", "input.text parts"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_OMNI))
def test_each_broken_vllm_omni_toy_fails_its_case_for_its_cause(name: str) -> None:
    toy, case_id, phrase = BROKEN_OMNI[name]
    with ServerThread(toy().app()) as server:
        result = run(case_id, omni_target(server.url))
    assert result.verdict is Verdict.FAILED, result.detail
    assert phrase in result.detail, result.detail


def test_the_good_toys_pass_the_cases_the_broken_ones_fail(good_omni: str) -> None:
    with ServerThread(OmniBaseToy().app()) as base:
        for _toy, case_id, _phrase in BROKEN_OMNI.values():
            assert run(case_id, omni_target(good_omni)).verdict is Verdict.OK, case_id
            assert run(case_id, omni_target(base.url)).verdict is Verdict.OK, case_id


def test_preflight_looks_for_the_websocket_at_the_dialects_route(good_omni: str) -> None:
    from bidi_tts_conformance.preflight_container import websocket_problem

    assert websocket_problem(good_omni, ws_path=dialect_named("vllm-omni").ws_path) is None
    problem = websocket_problem(good_omni)  # the kokoro-sample route: the toy has none
    assert problem is not None and "/invocations-bidirectional-stream" in problem


def test_ws_path_points_the_dialect_at_another_route(good_omni: str) -> None:
    from bidi_tts.dialects import dialect_at
    from bidi_tts.protocol import WS_PATH

    relayed = dialect_at("vllm-omni", WS_PATH)
    with ServerThread(OmniBaseToy().app()) as both_routes:  # serves the dialect on both routes
        assert run("frames.text.1", Target(kind="url", base_url=both_routes.url, dialect=relayed)).verdict is Verdict.OK
    only_its_own = run("frames.text.1", Target(kind="url", base_url=good_omni, dialect=relayed))
    assert only_its_own.verdict is Verdict.FAILED and "cannot open a session" in only_its_own.detail


def test_a_bad_ws_path_is_a_usage_error() -> None:
    proc = run_suite("--container-url", "http://127.0.0.1:9", "--dialect", "vllm-omni", "--ws-path", "v1/x")
    assert proc.returncode == 4
    assert "--ws-path must be a path starting with '/'" in proc.stdout + proc.stderr
