"""Findings of the dialect's wire rules fail the cases that cite their clause and are notes elsewhere."""

from __future__ import annotations

from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.dialect_judge import judge_findings
from bidi_tts_conformance.model import CaseResult, Verdict

FINDING = ("TTS-ORDER", "session.done of utterance 0 before audio.done of sentences [0]")


def test_a_case_citing_the_clause_fails_on_the_finding() -> None:
    result = judge_findings(CaseResult(REGISTRY["audio.order.1"], Verdict.OK, "11 frames"), [FINDING], "vllm-omni")
    assert result.verdict is Verdict.FAILED
    assert result.detail == "the vllm-omni wire broke TTS-ORDER: " + FINDING[1]


def test_a_case_not_citing_it_keeps_its_verdict_and_notes_the_finding() -> None:
    result = judge_findings(CaseResult(REGISTRY["audio.samples.1"], Verdict.OK, "ok"), [FINDING], "vllm-omni")
    assert result.verdict is Verdict.OK and result.notes == ["the vllm-omni wire broke TTS-ORDER: " + FINDING[1]]


def test_no_finding_changes_nothing_and_a_failure_stays_its_own() -> None:
    ok = CaseResult(REGISTRY["audio.order.1"], Verdict.OK, "fine")
    assert judge_findings(ok, [], "vllm-omni") is ok and ok.notes == []
    failed = CaseResult(REGISTRY["audio.order.1"], Verdict.FAILED, "its own cause")
    assert judge_findings(failed, [FINDING], "vllm-omni").detail == "its own cause"
