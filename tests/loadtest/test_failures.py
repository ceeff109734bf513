"""loadtest.failures: stable causes, and each cause logged once however often it happens."""

from __future__ import annotations

import logging

import pytest

from bidi_tts.transports.base import ConnectError, TransportClosed, TransportTimeout
from bidi_tts.transports.sagemaker import (
    SageMakerConfigError,
    SageMakerCredentialsError,
    SageMakerModelError,
    StreamFailure,
)
from bidi_tts_loadtest.run.failures import FATAL, FailureLog, cause_of


@pytest.mark.parametrize(("error", "cause"), [
    (SageMakerCredentialsError("no AWS credentials"), "credentials"),
    (SageMakerConfigError("bad region"), "region"),
    (ValueError("not a container URL"), "bad target"),
    (SageMakerModelError("424", status=424), "refused"),
    (ConnectError("cannot connect"), "refused"),
    (StreamFailure("InternalStreamFailure"), "stream error"),
    (TransportClosed(1011, "internal"), "stream error"),
    (TransportTimeout("no frame"), "timeout"),
])
def test_causes(error: Exception, cause: str) -> None:
    assert cause_of(error) == cause


def test_only_unfixable_causes_stop_a_run() -> None:
    assert FATAL == {"credentials", "region", "bad target"}


def test_each_cause_is_logged_once_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    failures = FailureLog()
    with caplog.at_level(logging.WARNING, logger="loadtest"):
        for _ in range(500):
            failures.note("refused", "ws://x: cannot connect")
        failures.note("timeout", "message timeout")
    assert failures.counts == {"refused": 500, "timeout": 1}
    assert len(caplog.records) == 2
    assert "session failed (refused): ws://x: cannot connect" in caplog.records[0].getMessage()
