"""`python -m bidi_tts_loadtest.transport_cost` (also `python -m loadtest.transport_cost`):
the command of :mod:`bidi_tts_loadtest.studies.transport_cost`."""

import sys

from bidi_tts_loadtest.studies.transport_cost import main

if __name__ == "__main__":
    sys.exit(main())
