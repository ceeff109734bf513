"""``python -m loadtest [LOCUST OPTIONS]``: Locust with the project's options registered up front.

Locust prints ``--help`` before it imports the locustfile, so ``locust -f loadtest/locustfile.py
--help`` cannot list the options the locustfile adds (locustio/locust#2917). This entry point
registers them first; ``-f loadtest/locustfile.py`` is the default. Everything else is Locust's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bidi_tts_loadtest import plugin as _plugin  # noqa: F401  (registers the options, events and the SLO gate)


def main() -> None:
    from locust.main import main as locust_main

    args = sys.argv[1:]
    if not any(a in ("-f", "--locustfile") or a.startswith("--locustfile=") for a in args):
        sys.argv[1:1] = ["-f", str(Path(__file__).with_name("locustfile.py"))]
    sys.argv[0] = "locust"
    locust_main()


if __name__ == "__main__":
    main()
