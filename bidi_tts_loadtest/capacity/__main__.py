"""`python -m bidi_tts_loadtest.capacity` (also `python -m loadtest.capacity`): the command of :mod:`.cli`."""

import sys

from bidi_tts_loadtest.capacity.cli import main

sys.exit(main())
