"""How a case ends other than with an outcome: the container broke the clause, the case cannot run here, or
what it judges did not occur.

Apart from the model so that the session driver and the case context can raise them without importing
the case model, which names the context in its signatures.
"""


class CaseFailed(Exception):
    """The container broke the clause. `detail` names the real cause, for people.

    `silence_s` is set when the only fault seen is that no frame came for that many seconds while one
    was due (no wrong frame, no close, no error): a verdict a container's pace alone can cause, which
    the runner re-checks before it stands (runner.SuiteRunner, pace_check.py)."""

    def __init__(self, detail: str, *, expected: str | None = None, actual: str | None = None,
                 silence_s: float | None = None) -> None:
        self.detail = detail
        self.expected = expected
        self.actual = actual
        self.silence_s = silence_s
        super().__init__(detail)


class CaseSkipped(Exception):
    """The case cannot run on this target; the message says why."""


class CaseNotJudged(Exception):
    """The situation the case judges did not occur here; the message says why (NOT-JUDGED, never a pass).

    The same verdict as a case returning ``model.not_judged(why)``: for a precondition a helper checks, so
    that each case calling it need not test for it and return."""


def silence_behind(exc: BaseException) -> float | None:
    """The silence a failure came from when nothing but a silence is behind it: the failure's own mark,
    or the mark of the failure it only rewords (a case that catches one and raises "message 1 of 2
    failed: <its detail>", with the detail whole). None for any other failure."""
    if not isinstance(exc, CaseFailed):
        return None
    if exc.silence_s is not None:
        return exc.silence_s
    inner = exc.__context__
    if isinstance(inner, CaseFailed) and inner.silence_s is not None and inner.detail in exc.detail:
        return inner.silence_s
    return None
