"""Breaks of a dialect's own wire rules (the translator's findings) judged by the cases that own them.

A dialect says some TTS rules its own way: in vllm-omni, TTS-ORDER includes each sentence's
audio.done before its flush's session.done, and every sentence of the text sent spoken. The
translator records each break with the TTS clause it breaks; a case citing that clause fails on it
(the case judged the clause and the wire broke it), every other case carries it as a note.
"""

from __future__ import annotations

from collections.abc import Iterable

from bidi_tts_conformance.model import CaseResult, Verdict

PASSING = (Verdict.OK, Verdict.NON_STRICT)


def judge_findings(result: CaseResult, findings: Iterable[tuple[str, str]], dialect: str) -> CaseResult:
    """`result`, failed on the first finding whose clause the case cites; the others as notes."""
    owned = [(clause, why) for clause, why in findings if clause in result.case.clauses]
    others = [f"the {dialect} wire broke {clause}: {why}" for clause, why in findings
              if (clause, why) not in owned]
    if owned and result.verdict in PASSING:
        clause, why = owned[0]
        more = f" (and {len(owned) - 1} more)" if len(owned) > 1 else ""
        failed = CaseResult(result.case, Verdict.FAILED, f"the {dialect} wire broke {clause}: {why}{more}",
                            f"the {dialect} form of {clause}", why)
        failed.notes.extend(others)
        return failed
    result.notes.extend(others + [f"the {dialect} wire broke {c}: {w}" for c, w in owned])
    return result
