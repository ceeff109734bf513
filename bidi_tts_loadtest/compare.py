"""`python -m bidi_tts_loadtest.compare` (also `bidi-tts-load --compare`):
the command of :mod:`bidi_tts_loadtest.run.compare`."""

import sys

from bidi_tts_loadtest.run.compare import main

if __name__ == "__main__":
    sys.exit(main())
