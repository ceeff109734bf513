"""`python -m bidi_tts_loadtest.fleet_sim` (also `python -m loadtest.fleet_sim`):
the command of :mod:`bidi_tts_loadtest.fleet.cli`."""

import sys

from bidi_tts_loadtest.fleet.cli import main

if __name__ == "__main__":
    sys.exit(main())
