"""stop.sigterm.1 against an image as it runs (the Docker target: SIGTERM goes to the image's own PID 1, its
entrypoint): FAILED on a toy image whose shell entrypoint starts the server in the background and waits with
`wait -n` with no trap (SIGTERM dropped: PID 1 named, and why); FAILED on the AWS sample's vllm entrypoint
shape (an EXIT-only trap: it exits at once, cutting the session); OK on the same server behind an entrypoint
that execs it (it drains and closes with 1001). Needs a Docker engine and the local base image
(docker/build-base.sh); skipped without them."""

from __future__ import annotations

import os

import pytest

from bidi_tts_conformance.cases import REGISTRY, stop
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import DockerTarget
from tests.toys import stop_image

FAST = Options(silence=5.0, case_timeout=60.0)
DROPPED = ("PID 1 of the container is `/bin/bash /opt/toy/entrypoint`, which has no SIGTERM handler, and as PID 1 "
           "the kernel drops a signal it has no handler for")


@pytest.fixture(scope="module", autouse=True)
def _docker() -> None:
    if reason := stop_image.missing():
        pytest.skip(reason)
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")


def _sigterm_on(tag: str, entry: str) -> CaseResult:
    target = DockerTarget(image=stop_image.build(tag, entry), ready_timeout=60.0)
    target.start()
    try:
        return run_case(REGISTRY["stop.sigterm.1"], target, FAST)
    finally:
        target.stop()


@pytest.mark.timeout(240)
def test_a_shell_entrypoint_that_drops_sigterm_fails_naming_pid_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stop, "GRACE_S", 5.0)  # SageMaker's 30 s, shortened for the test
    result = _sigterm_on(*stop_image.DROPS)
    assert result.verdict is Verdict.FAILED, result.detail
    assert "did not exit within 5 s of SIGTERM (sent mid-synthesis)" in result.detail, result.detail
    assert DROPPED in result.detail, result.detail


@pytest.mark.timeout(240)
def test_the_vllm_entrypoint_shape_exits_at_once_and_fails_for_the_cut_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """The AWS sample's vllm entrypoint.sh (trap cleanup EXIT; wait -n): bash catches SIGTERM to run its EXIT
    trap (SigCgt has it), so the container does not ignore SIGTERM: it exits at once, and its server dies
    with it mid-message, with no close frame."""
    monkeypatch.setattr(stop, "GRACE_S", 5.0)
    result = _sigterm_on(*stop_image.EXIT_TRAP)
    assert result.verdict is Verdict.FAILED, result.detail
    assert "but cut its session: the queued message unfinished, the container dropped the connection without a " \
           "close frame (1006)" in result.detail, result.detail
    assert "PID 1 of the container is `/bin/bash /opt/toy/entrypoint`, which catches SIGTERM" in result.detail


@pytest.mark.timeout(240)
def test_an_entrypoint_that_execs_the_server_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stop, "GRACE_S", 10.0)  # it drains the queued message (about 4.6 s) before it exits
    result = _sigterm_on(*stop_image.EXECS)
    assert result.verdict is Verdict.OK, result.detail
    assert "after SIGTERM (sent mid-synthesis); " in result.detail, result.detail
    assert any(end in result.detail for end in ("the message finished", "closed the session with 1001")), result.detail
