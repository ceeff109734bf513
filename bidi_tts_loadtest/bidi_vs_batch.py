"""`python -m bidi_tts_loadtest.bidi_vs_batch` (also `python -m loadtest.bidi_vs_batch`):
the command of :mod:`bidi_tts_loadtest.studies.bidi_vs_batch`."""

import sys

from bidi_tts_loadtest.studies.bidi_vs_batch import main

if __name__ == "__main__":
    sys.exit(main())
