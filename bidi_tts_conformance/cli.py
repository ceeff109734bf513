"""`bidi-tts-conformance`: the conformance suite as one command, from an installed wheel.

    bidi-tts-conformance --container-url http://127.0.0.1:8080
    bidi-tts-conformance --endpoint-name NAME --region us-east-1
    bidi-tts-conformance --list-cases
    bidi-tts-conformance --compare A.json B.json ... [--output OUT.html]   (reports side by side)

It runs the installed suite through pytest with the same options as `pytest conformance` (every
pytest option too) and exits like it:

    0   every selected case passed
    1   a case failed
    4   a usage error: a URL without a scheme, a --case or --clause that selects nothing, a bad
        --region/--endpoint-url/--endpoint-ca, no target given and the reference container not
        installed
    69  the target cannot be reached or is not a container (nothing listens, no HTTP answer, /ping
        not 200 and no WebSocket, still loading after --ready-timeout; for an endpoint: no AWS
        credentials, an unresolvable region, an unreachable or untrusted runtime, an unknown
        endpoint, a container behind it that does not answer)

and pytest's own 2 (interrupted), 3 (internal error), 5 (no tests). A usage error or an unreachable
target is one `ERROR: ...` line, before any case runs.

Run from any folder: the suite ignores the folder's own pytest configuration, writes no
`.pytest_cache`, and keeps its reports under `reports/` unless told otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from bidi_tts_conformance.report import suite_version

PACKAGE_DIR = Path(__file__).resolve().parent
CASES_MODULE = PACKAGE_DIR / "test_cases.py"
SUITE_INI = PACKAGE_DIR / "suite.ini"

# Reports the command writes unless the caller names its own paths.
DEFAULT_REPORTS = {
    "--conformance-report": "reports/conformance.json",
    "--junitxml": "reports/conformance-junit.xml",
    "--conformance-html": "reports/conformance.html",
}


def _given(args: Sequence[str], option: str) -> bool:
    return any(a == option or a.startswith(option + "=") for a in args)


def pytest_args(user_args: Sequence[str]) -> list[str]:
    """The pytest command line that runs the installed suite with the user's options."""
    args = [str(CASES_MODULE), "-c", str(SUITE_INI), "--rootdir", str(Path.cwd()), "-p", "no:cacheprovider"]
    listing = _given(user_args, "--list-cases") or _given(user_args, "--help") or _given(user_args, "-h")
    if not listing:
        args += [f"{opt}={path}" for opt, path in DEFAULT_REPORTS.items() if not _given(user_args, opt)]
    return [*args, *user_args]


def main(argv: Sequence[str] | None = None) -> int:
    user_args = list(sys.argv[1:] if argv is None else argv)
    if user_args[:1] == ["--version"]:
        print(f"bidi-tts-conformance {suite_version()}")
        return 0
    if user_args[:1] == ["--compare"]:
        from bidi_tts_conformance.compare import main as compare_main

        return compare_main(user_args[1:])
    return int(pytest.main(pytest_args(user_args)))


if __name__ == "__main__":
    raise SystemExit(main())
