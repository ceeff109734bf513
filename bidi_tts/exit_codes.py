"""The exit codes every command of the project uses (docs/exit-codes.md lists them once).

The conformance suite set the numbers first (pytest's own 4 for a usage error, sysexits' 69 for
EX_UNAVAILABLE); the load tools follow it so a CI step can tell the situations apart by code. They
live here, on the floor every command stands on; ``bidi_tts_loadtest.core.exit_codes`` hands them on.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

OK = 0
#: The run finished and its verdict is negative: a case failed, an SLO broke, measured messages failed.
BROKEN = 1
#: The command line is wrong (a bad option value, a URL without a scheme, a missing file).
USAGE = 4
#: Nothing usable answers at the target (refused, unresolvable, no credentials, not a container).
UNREACHABLE = 69
#: The run itself could not finish: the browser or a helper process died, the target stopped mid-run.
RUN_FAILED = 70


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit :data:`USAGE` (argparse's own is 2 and the usage)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(USAGE)
