"""One exception type for everything the deploy tool refuses or fails at, with its exit code."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes of `python -m reference_container.deploy` (documented in docs/deploy.md)."""

    OK = 0
    AWS_ERROR = 1
    USAGE = 2
    LABEL = 3
    ENDPOINT_FAILED = 4
    TIMEOUT = 5
    BUILD = 6
    NO_CREDENTIALS = 7
    INTERRUPTED = 130


class DeployError(Exception):
    """A failure reported to the user as one line: what went wrong, then the fix.

    `log_group` names the CloudWatch log group worth reading, when there is one.
    """

    def __init__(
        self, code: ExitCode, message: str, fix: str | None = None, *, log_group: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fix = fix
        self.log_group = log_group
        self.note: str | None = None

    def one_line(self) -> str:
        """The error and its fix on one line, as printed on stderr."""
        line = f"error: {self.message}"
        if self.fix:
            line += f" Fix: {self.fix}"
        if self.note:
            line += f" ({self.note})"
        return line
