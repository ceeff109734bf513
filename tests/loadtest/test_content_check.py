"""loadtest.content_check: a worker process hears every Nth message and counts content errors by cause."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bidi_tts_hearing import unavailable_reason
from bidi_tts_loadtest.run.content_check import ContentVerifier, judge
from tests.loadtest.servers import ROOT, locust_cmd
from tests.toys.speaking import espeak_available, speak

RATE = 24_000
RIGHT = "The children are playing football. Please close the window."
OTHER = "The old man reads a book."


def test_judge_names_the_cause_without_a_model() -> None:
    assert judge(RIGHT, "the children are playing football please close the window").ok
    assert judge(RIGHT, "Please close the window.").kinds == ["dropped"]
    assert judge(RIGHT, "The children are playing football.").kinds == ["dropped"]
    wrong = judge("The garden is full of yellow flowers.", "The engine is ever market flowers.")
    assert wrong.kinds == ["dropped"] and "dropped" in wrong.problems[0]
    extra = judge("Turn left at the bank.", "Turn left at the bank, then walk along the river to the old mill.")
    assert extra.kinds == ["wrong words"], extra


def test_every_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ContentVerifier(every=0)


@pytest.fixture
def verifier() -> Iterator[ContentVerifier]:
    if not espeak_available():
        pytest.skip("needs espeak-ng (Debian package espeak-ng)")
    if reason := unavailable_reason():
        pytest.skip(reason)
    v = ContentVerifier(every=2, max_pending=3)
    v.wait_ready()
    yield v
    v.close()
    assert v._proc.poll() is not None, "the worker process outlived close()"


@pytest.mark.timeout(180)
def test_samples_every_nth_message_and_counts_wrong_audio(verifier: ContentVerifier) -> None:
    right, wrong = speak(RIGHT, RATE), speak(OTHER, RATE)
    queued = [verifier.submit(RIGHT, right, RATE), verifier.submit(RIGHT, right, RATE),  # 2nd is checked
              verifier.submit(RIGHT, wrong, RATE), verifier.submit(RIGHT, wrong, RATE)]  # 4th is checked
    assert queued == [False, True, False, True]
    verifier.drain(120)
    summary = verifier.summary()
    assert (verifier.checked, verifier.content_errors) == (2, 1), summary
    assert summary["causes"] == {"dropped": 1} and summary["examples"][0]["heard"], summary
    assert summary["submitted"] == 4 and summary["skipped_busy"] == 0 and summary["worker_failure"] is None
    assert [r.ok for r in verifier.take_results()] == [True, False] and verifier.take_results() == []


@pytest.mark.timeout(180)
def test_a_busy_worker_skips_rather_than_queues(verifier: ContentVerifier) -> None:
    pcm = speak(RIGHT, RATE)
    queued = sum(verifier.submit(RIGHT, pcm, RATE) for _ in range(20))  # 10 sampled, at most 3 pending
    assert queued <= 4 and verifier.skipped_busy >= 6
    verifier.drain(120)
    assert verifier.checked == queued and verifier.content_errors == 0, verifier.summary()


@pytest.mark.timeout(60)
def test_a_worker_without_a_model_fails_fast_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIDI_TTS_WHISPER_MODEL", os.devnull)
    verifier = ContentVerifier(every=1)
    try:
        with pytest.raises(RuntimeError, match="no speech recognizer for --verify-audio-every"):
            verifier.wait_ready()
        assert not verifier.submit(RIGHT, b"\0\0" * RATE, RATE)
    finally:
        verifier.close()


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize(("toy", "errors"), [("SpeakingToy", False), ("RepeatsPreviousToy", True)])
def test_locust_run_reports_content_errors_and_gates_on_them(toy: str, errors: bool, tmp_path: Path) -> None:
    """--verify-audio-every 1 hears every turn; a container repeating the previous message fails the gate."""
    if not espeak_available() or unavailable_reason():
        pytest.skip("needs espeak-ng and the 'hearing' extra")
    from tests.toys import speaking
    from tests.toys.good import ServerThread

    out = tmp_path / "summary.json"
    with ServerThread(getattr(speaking, toy)().app()) as server:
        proc = subprocess.run(
            locust_cmd("--headless", "-u", "1", "-r", "1", "--run-time", "8s", "--host", server.url,
                       "--summary-json", str(out), "--tokens-per-second", "200", "--turn-pause-s", "0.1",
                       "--only-summary", "--verify-audio-every", "1", "--slo-max-content-errors", "0"),
            cwd=ROOT, capture_output=True, text=True, timeout=200)
    summary = json.loads(out.read_text())
    assert summary["content_checked"] >= 1, proc.stderr[-3000:]
    if errors:
        assert summary["content_errors"] >= 1 and proc.returncode == 1, summary
        assert set(summary["content_causes"]) & {"repeated", "dropped"}, summary["content_causes"]
        assert any("content errors" in b for b in summary["slo_broken"]), summary["slo_broken"]
    else:
        assert summary["content_errors"] == 0 and proc.returncode == 0, (
            summary.get("content_causes"), summary.get("slo_broken"), proc.stderr[-2000:])


@pytest.mark.timeout(90)
def test_locust_run_without_a_recognizer_stops_at_once_with_the_reason() -> None:
    import socket

    with socket.socket() as listening:  # something listens, so the run gets past its target preflight
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        proc = subprocess.run(
            locust_cmd("--headless", "-u", "1", "-r", "1", "--run-time", "60s", "--host",
                       f"http://127.0.0.1:{listening.getsockname()[1]}", "--only-summary", "--verify-audio-every", "1"),
            cwd=ROOT, capture_output=True, text=True, timeout=40,
            env={**os.environ, "BIDI_TTS_WHISPER_MODEL": os.devnull})
    assert proc.returncode == 70  # docs/exit-codes.md: the run could not go on (the recognizer did not start)
    assert "no speech recognizer for --verify-audio-every" in proc.stderr and "Traceback" not in proc.stderr
