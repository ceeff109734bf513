"""Which case judges which session rule: a deviation fails the case that is about it, and is only a
note in every other case that happens to see it (Autobahn|Testsuite's model).

Rules not listed here are judged by no case through the session's checker; the cases about them
check them explicitly (an error frame without a code fails the error-code cases through their own
judgement of the code).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from bidi_tts.session import Rule

#: The focus of a conversation made outside a case (calibration, tests): it judges every rule.
EVERY_RULE: frozenset[Rule] = frozenset(Rule)

RULE_OWNERS: dict[Rule, tuple[str, ...]] = {
    Rule.START_SAMPLE_RATE: ("audio.format.1",),
    Rule.START_OVERLAP: ("audio.order.1", "session.pipelined.1"),
    Rule.START_UNSOLICITED: ("audio.order.1",),
    Rule.START_REQUEST_ID: ("session.request_id.1",),
    Rule.AUDIO_OUTSIDE: ("audio.order.1",),
    Rule.CONTROL_UNKNOWN: ("audio.order.1",),
    Rule.COMPLETE_UNSTARTED: ("audio.order.1",),
    Rule.COMPLETE_NO_AUDIO: ("audio.order.1",),
    Rule.AUDIO_ODD_LENGTH: ("audio.samples.1",),
    Rule.AUDIO_EMPTY: ("audio.samples.1",),
    Rule.AUDIO_WRAPPED: ("audio.wrap.1",),
    Rule.TEXT_NOT_JSON: ("audio.binary.1", "sagemaker.datatype.1"),
    Rule.AUDIO_IN_JSON: ("audio.binary.1", "sagemaker.datatype.1"),
    Rule.COMPLETE_BYTES: ("audio.consistent.1",),
    Rule.COMPLETE_BYTES_MISSING: ("audio.consistent.1",),
    Rule.ERROR_NO_MESSAGE: ("errors.*", "robust.*"),
    Rule.ERROR_AFTER_START: ("errors.*", "robust.*"),
}


def focus_of(case_id: str) -> frozenset[Rule]:
    """The session rules that the case `case_id` judges."""
    return frozenset(rule for rule, owners in RULE_OWNERS.items()
                     if any(fnmatch.fnmatchcase(case_id, owner) for owner in owners))


# Rules judged outside the session's checker, by the cases' own checks: who, for the notes.
JUDGED_ELSEWHERE: dict[Rule, str] = {
    Rule.ERROR_NO_CODE: "the errors.* and robust.* cases, each checking the code of its own error",
}


def judged_by(rule: Rule) -> str:
    """The case (or group) that judges `rule`, for notes in other cases."""
    owners = RULE_OWNERS.get(rule)
    return " and ".join(owners) if owners else JUDGED_ELSEWHERE.get(rule, "no single case")


@dataclass(slots=True)
class Notes:
    """Deviations seen outside a case's focus: reported once each, never judged by that case."""

    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        if line not in self.lines:
            self.lines.append(line)
