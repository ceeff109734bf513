"""Conformance cases as data: ids, clauses, expectations, verdicts and the registry.

Modelled on Autobahn|Testsuite and h2spec: every case has a stable id (``frames.binary.1``), a
one-line description, the CONTRACT.md clauses it enforces, what it expects, and an async check
that yields a verdict. The checks never know which target they run against.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bidi_tts_conformance.context import CaseContext
    from bidi_tts_conformance.trace import FrameTrace


class Verdict(StrEnum):
    """How a case ended (Autobahn's vocabulary, plus SKIPPED for cases the target cannot run)."""

    OK = "OK"
    NON_STRICT = "NON-STRICT"  # works, but bends a SHOULD or lacks an optional clause
    FAILED = "FAILED"
    INFORMATIONAL = "INFORMATIONAL"  # measured and reported, never judged
    SKIPPED = "SKIPPED"  # the target cannot run this case (e.g. HTTP cases over SageMaker)
    # The case ran but could not judge: the situation it is about did not occur (a container that does
    # not stream gives no moment "mid-synthesis"), or the container was busy with another case's
    # runaway, or it cannot synthesize at all. Never a pass; reported apart, not as a failure.
    NOT_JUDGED = "NOT-JUDGED"


class Requires(StrEnum):
    """What a case needs from its target."""

    HTTP = "http"  # a base URL for /ping
    INVOCATIONS = "invocations"  # POST /invocations: direct, or through InvokeEndpointWithResponseStream
    WEBSOCKET = "websocket"  # the direct WebSocket transport (headers, raw frame control)
    SAGEMAKER = "sagemaker"  # the SageMaker transport (DataType, ModelStreamError)
    IMAGE = "image"  # a Docker image to inspect


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a check returns when it does not fail."""

    verdict: Verdict = Verdict.OK
    detail: str = ""


def ok(detail: str = "") -> Outcome:
    return Outcome(Verdict.OK, detail)


def non_strict(detail: str) -> Outcome:
    return Outcome(Verdict.NON_STRICT, detail)


def informational(detail: str) -> Outcome:
    return Outcome(Verdict.INFORMATIONAL, detail)


def not_judged(detail: str) -> Outcome:
    """The situation the case judges did not occur; `detail` says why (never a pass)."""
    return Outcome(Verdict.NOT_JUDGED, detail)


CheckFn = Callable[["CaseContext"], Awaitable[Outcome | None]]


@dataclass(frozen=True, slots=True)
class Case:
    """One conformance case: data plus its check coroutine."""

    id: str
    description: str
    clauses: tuple[str, ...]
    expectation: str
    check: CheckFn
    requires: frozenset[Requires] = frozenset()

    @property
    def group(self) -> str:
        return self.id.split(".", 1)[0]


@dataclass(slots=True)
class CaseResult:
    """The verdict of one case run, with the expected-vs-actual detail of a failure."""

    case: Case
    verdict: Verdict
    detail: str = ""
    expected: str | None = None
    actual: str | None = None
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)  # deviations seen that other cases judge
    left_work_running: bool = False  # a session closed with its message unfinished
    trace: FrameTrace | None = None  # the frames sent and received (bounded), for the case page

    @property
    def passed(self) -> bool:
        return self.verdict is not Verdict.FAILED


class Registry:
    """All cases, in definition order, addressable by id and glob."""

    def __init__(self) -> None:
        self._cases: dict[str, Case] = {}

    def add(self, case: Case) -> Case:
        if case.id in self._cases:
            raise ValueError(f"duplicate case id {case.id!r}")
        self._cases[case.id] = case
        return case

    def __iter__(self) -> Iterator[Case]:
        return iter(self._cases.values())

    def __len__(self) -> int:
        return len(self._cases)

    def __getitem__(self, case_id: str) -> Case:
        return self._cases[case_id]

    def select(self, globs: Iterable[str] | None = None) -> list[Case]:
        """Cases whose id matches any of the globs (all cases when there are none)."""
        patterns = [g for g in (globs or []) if g]
        if not patterns:
            return list(self._cases.values())
        return [c for c in self._cases.values() if any(fnmatch.fnmatchcase(c.id, p) for p in patterns)]


REGISTRY = Registry()


def case(
    id: str,
    description: str,
    *,
    clauses: Iterable[str],
    expect: str,
    requires: Iterable[Requires] = (),
) -> Callable[[CheckFn], CheckFn]:
    """Register the decorated coroutine as the check of a new case."""

    def register(check: CheckFn) -> CheckFn:
        REGISTRY.add(Case(id, description, tuple(clauses), expect, check, frozenset(requires)))
        return check

    return register
