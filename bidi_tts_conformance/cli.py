"""`bidi-tts-conformance`: the conformance suite as one command, from an installed wheel.

It runs the installed suite through pytest with the same options as `pytest conformance` (every
pytest option too) and exits like it; `--help` is the command's own (HELP below), `--help-pytest`
is pytest's full list. `--version` and `--compare` work anywhere in the argument list.

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

HELP = """\
usage: bidi-tts-conformance [TARGET] [OPTIONS] [PYTEST OPTIONS]
       bidi-tts-conformance --compare A.json B.json ... [--output OUT.html]
       bidi-tts-conformance --list-cases | --version | --help | --help-pytest

Check a streaming-TTS container against the SageMaker bidirectional-streaming contract and the
TTS protocol (docs/guarantees.md); write JSON, JUnit and HTML reports under reports/.

target (one of):
  --container-url URL      a running container, e.g. http://127.0.0.1:8080
  --endpoint-name NAME     a SageMaker endpoint (with --region R; --endpoint-url URL and
                           --endpoint-ca ca.pem for the local stand-in of the runtime)
  (neither)                start the reference container: --target auto|docker|process,
                           --image IMAGE for docker

options a container author needs:
  --list-cases             list case ids, clauses and descriptions, then exit
  --case GLOB              run only the cases whose id matches (repeatable)
  --clause ID              run only the cases that cite this clause, e.g. TTS-ORDER (repeatable)
  --conformance-strict     NON-STRICT verdicts fail too
  --voice NAME             voice for the cases (default af_heart)
  --sample-rate HZ         sample rate for the cases (default 24000)
  --dialect NAME           wire protocol: kokoro-sample (default) or vllm-omni (docs/dialects.md)
  --ws-path PATH           the route the dialect is served on, when not its own (a relay's)
  --ready-timeout S        how long to wait for /ping to answer 200
  --reply-timeout S        silence allowed while an expected frame is due (default: calibrated)
  --case-timeout S         time for one whole case
  --conformance-report P   JSON report (default reports/conformance.json)
  --conformance-html P     HTML report with a page per case (default reports/conformance.html)
  --junitxml P             JUnit XML (default reports/conformance-junit.xml)
  --container-log P        the process target's output
  --compare A.json B.json  several reports side by side as one HTML page (--output OUT.html)
  --version                the suite's version
  --help-pytest            every pytest option as well (the suite's are under "conformance")

exit codes (docs/exit-codes.md; the same for every command of the project):
  0   every selected case passed
  1   a case failed
  4   usage error: a URL without a scheme, a --case/--clause that selects nothing, a bad
      --region/--endpoint-url/--endpoint-ca, no target and no reference container installed
  69  the target cannot be reached or is not a container (nothing listens, /ping never 200,
      no AWS credentials, unknown endpoint)
  2, 3, 5  pytest's own: interrupted, internal error, no tests collected

examples:
  bidi-tts-conformance --container-url http://127.0.0.1:8080
  bidi-tts-conformance --container-url http://127.0.0.1:8080 --clause TTS-ORDER -q
  bidi-tts-conformance --endpoint-name my-tts --region us-east-1
"""


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
    if "--compare" in user_args:  # anywhere: the rest are its files and --output
        from bidi_tts_conformance.compare import main as compare_main

        user_args.remove("--compare")
        return compare_main(user_args)
    if "--version" in user_args:
        print(f"bidi-tts-conformance {suite_version()}")
        return 0
    if "--help-pytest" in user_args:
        return int(pytest.main(pytest_args(["--help"])))
    if "--help" in user_args or "-h" in user_args:
        print(HELP, end="")
        return 0
    return int(pytest.main(pytest_args(user_args)))


if __name__ == "__main__":
    raise SystemExit(main())
