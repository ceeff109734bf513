"""From a ladder to a fleet and its scaling policy (`python -m bidi_tts_loadtest.plan`)."""
