"""How a case ends other than with an outcome: the container broke the clause, or the case cannot run here.

Apart from the model so that the session driver and the case context can raise them without importing
the case model, which names the context in its signatures.
"""


class CaseFailed(Exception):
    """The container broke the clause. `detail` names the real cause, for people."""

    def __init__(self, detail: str, *, expected: str | None = None, actual: str | None = None) -> None:
        self.detail = detail
        self.expected = expected
        self.actual = actual
        super().__init__(detail)


class CaseSkipped(Exception):
    """The case cannot run on this target; the message says why."""
