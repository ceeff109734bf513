"""How the runner turns the ways a check ends into verdicts: raising CaseNotJudged is the same verdict, with
the same detail, as returning not_judged(...)."""

from __future__ import annotations

from bidi_tts_conformance.context import CaseContext, Options
from bidi_tts_conformance.failures import CaseNotJudged
from bidi_tts_conformance.model import Case, Outcome, Verdict, not_judged
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import Target

NOWHERE = Target(kind="url", base_url="http://127.0.0.1:9")  # never reached: the checks open no session
WHY = "the situation did not occur here"


async def _returns(_ctx: CaseContext) -> Outcome:
    return not_judged(WHY)


async def _raises(_ctx: CaseContext) -> Outcome:
    raise CaseNotJudged(WHY)


def test_raising_case_not_judged_is_the_same_verdict_as_returning_not_judged() -> None:
    returned, raised = (run_case(Case(f"test.{name}.1", "a check", (), "", check), NOWHERE, Options())
                        for name, check in (("returns", _returns), ("raises", _raises)))
    assert (raised.verdict, raised.detail, raised.expected, raised.actual) == (
        returned.verdict, returned.detail, returned.expected, returned.actual) == (Verdict.NOT_JUDGED, WHY, None, None)
