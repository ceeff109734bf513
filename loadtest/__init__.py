"""The old import name of the load test, kept so that the documented commands go on working.

The code is the `bidi_tts_loadtest` package (a name no other project's `loadtest` can collide with
once installed). `python -m loadtest.bidi_vs_batch ...`, `python -m loadtest.capacity ...` and
`python -m loadtest` find their modules there through this package's search path; new code imports
`bidi_tts_loadtest`.
"""

import bidi_tts_loadtest as _code

__path__ = [*__path__, *_code.__path__]
