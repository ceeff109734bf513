"""`python -m bidi_tts_conformance`: the same as the `bidi-tts-conformance` command."""

from bidi_tts_conformance.cli import main

raise SystemExit(main())
