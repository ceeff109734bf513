"""`python -m bidi_tts_loadtest.browser_ttfa` (also `python -m loadtest.browser_ttfa`): the command of
:mod:`bidi_tts_loadtest.relay.browser_ttfa`. Its Chromium finder and flags are named here too, for the
conformance report's page tests, which import them from this name."""

import sys

from bidi_tts_loadtest.relay.browser_ttfa import CHROMIUM_ARGS, find_chromium, main

__all__ = ["CHROMIUM_ARGS", "find_chromium", "main"]

if __name__ == "__main__":
    sys.exit(main())
