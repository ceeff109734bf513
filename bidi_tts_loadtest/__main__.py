"""``bidi-tts-load [LOCUST OPTIONS]`` (or ``python -m bidi_tts_loadtest``): Locust with the project's
locustfile and options registered up front; ``bidi-tts-load --compare A.json B.json ...`` compares
summaries.

Locust prints ``--help`` before it imports the locustfile, so ``locust -f loadtest/locustfile.py
--help`` cannot list the options the locustfile adds (locustio/locust#2917). This entry point
registers them first; ``-f`` defaults to the installed package's locustfile, so the same command
works from a checkout and from the wheel. Everything else is Locust's.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    args = sys.argv[1:]
    if "--compare" in args:
        from bidi_tts_loadtest.run.compare import main as compare_main

        args.remove("--compare")
        raise SystemExit(compare_main(args))
    from locust.main import main as locust_main

    from bidi_tts_loadtest.run import plugin as _plugin  # noqa: F401  (registers the options, events and the SLO gate)

    if not any(a in ("-f", "--locustfile") or a.startswith("--locustfile=") for a in args):
        sys.argv[1:1] = ["-f", str(Path(__file__).parent / "run" / "locustfile.py")]
    sys.argv[0] = "bidi-tts-load"
    locust_main()


if __name__ == "__main__":
    main()
