"""`bidi-tts-conformance-gate IMAGE [SUITE OPTIONS...]`: start a container image, run the suite on it,
keep the reports; the CI step of docs/ci.md. The steps are the shell script beside this module
(`gate.sh`), so that a CI log shows each of them; this only finds it and hands over to bash."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

GATE_SCRIPT = Path(__file__).resolve().with_name("gate.sh")


def main() -> None:
    bash = shutil.which("bash")
    if bash is None:
        sys.exit("bidi-tts-conformance-gate: needs bash on PATH")
    os.execv(bash, [bash, str(GATE_SCRIPT), *sys.argv[1:]])


if __name__ == "__main__":
    main()
