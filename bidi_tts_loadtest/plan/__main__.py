"""`python -m bidi_tts_loadtest.plan` (also `python -m loadtest.plan`): the command of :mod:`.cli`."""

import sys

from bidi_tts_loadtest.plan.cli import main

sys.exit(main())
