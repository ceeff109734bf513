"""The conformance cases, collected by `uv run pytest conformance` (one test per case id).

The cases and the plugin live in the `bidi_tts_conformance` package (the `pytest11` plugin of the
project's wheel); this module only puts the case collection where `pytest conformance` looks.
"""

from bidi_tts_conformance.test_cases import conformance_cases

__all__ = ["conformance_cases"]
