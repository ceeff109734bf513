"""`python -m bidi_tts_loadtest.ladder` (also `python -m loadtest.ladder`): the command of :mod:`.cli`."""

import sys

from bidi_tts_loadtest.ladder.cli import main

sys.exit(main())
