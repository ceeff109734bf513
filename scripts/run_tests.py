"""`./run tests`: every test, in two phases, with the arguments given to both.

1. parallel: the tests not marked `serial`, on pytest-xdist workers (`--dist loadfile`: a module's
   tests, and its module-scoped servers and containers, stay on one worker). Most tests wait on
   sockets, timeouts and child processes: a whole run keeps about a third of one core busy.
2. serial: the tests marked `serial` (root conftest.py: the conformance suite's own folder, Docker,
   CPU meters and timing), alone on the machine, in collection order.

Both phases run even when the first fails, so one run reports every failure. `--junitxml PATH` gets
one file with both phases' suites. The exit status is the first phase's failure, else the second's;
"no tests collected" (5) only when neither phase ran a test. Workers: $BIDI_TTS_TEST_WORKERS (default
4; 0 runs one plain pytest, every test in collection order, as before the phases).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

NO_TESTS = 5
WORKERS_ENV = "BIDI_TTS_TEST_WORKERS"


def split_option(args: list[str], name: str) -> tuple[str | None, list[str]]:
    """The value of `name` (`--name=V` or `--name V`; the last one wins) and the arguments without it."""
    value, rest, i = None, [], 0
    while i < len(args):
        arg = args[i]
        if arg == name and i + 1 < len(args):
            value, i = args[i + 1], i + 2
            continue
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return value, rest


def marker_filter(user: str | None, phase: str) -> str:
    return phase if user is None else f"({user}) and {phase}"


def merge_junit(parts: list[Path], into: Path) -> None:
    """One <testsuites> with every phase's <testsuite> (a phase that wrote no file is left out)."""
    merged = ET.Element("testsuites", name="pytest tests")
    for part in parts:
        if part.exists():
            root = ET.parse(part).getroot()
            merged.extend(root.iter("testsuite") if root.tag == "testsuites" else [root])
            part.unlink()
    into.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(merged).write(into, encoding="utf-8", xml_declaration=True)


def combined_status(codes: list[int]) -> int:
    failed = [code for code in codes if code not in (0, NO_TESTS)]
    if failed:
        return failed[0]
    return NO_TESTS if all(code == NO_TESTS for code in codes) else 0


def main(argv: list[str]) -> int:
    workers = os.environ.get(WORKERS_ENV, "4")
    if not workers.isdigit():
        print(f"run tests: {WORKERS_ENV} must be a whole number of workers, not {workers!r}", file=sys.stderr)
        return 4
    pytest = [sys.executable, "-m", "pytest"]
    if workers == "0":
        return subprocess.call([*pytest, *argv])
    junit, args = split_option(argv, "--junitxml")
    user_markers, args = split_option(args, "-m")
    phases = [("parallel", ["-n", workers, "--dist", "loadfile", "-m", marker_filter(user_markers, "not serial")]),
              ("serial", ["-m", marker_filter(user_markers, "serial")])]
    codes, parts = [], []
    for name, options in phases:
        extra = []
        if junit is not None:
            parts.append(Path(f"{junit}.{name}.xml"))
            extra = [f"--junitxml={parts[-1]}"]
        print(f"\n=== run tests: the {name} phase ({' '.join(options)})", flush=True)
        started = time.monotonic()
        codes.append(subprocess.call([*pytest, *options, *extra, *args]))
        print(f"=== run tests: the {name} phase ended with status {codes[-1]} after "
              f"{time.monotonic() - started:.0f} s", flush=True)
    if junit is not None:
        merge_junit(parts, Path(junit))
    return combined_status(codes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
