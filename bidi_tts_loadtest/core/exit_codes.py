"""The project's exit codes, as the load tools import them: they live in :mod:`bidi_tts.exit_codes`.

Kept as a name so the load tools' ``from bidi_tts_loadtest import exit_codes`` reads on; nothing is
defined here.
"""

from bidi_tts.exit_codes import BROKEN, OK, RUN_FAILED, UNREACHABLE, USAGE, Parser

__all__ = ["BROKEN", "OK", "RUN_FAILED", "UNREACHABLE", "USAGE", "Parser"]
