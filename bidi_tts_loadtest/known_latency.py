"""`python -m bidi_tts_loadtest.known_latency` (also `python -m loadtest.known_latency`):
the command of :mod:`bidi_tts_loadtest.studies.known_latency`."""

from bidi_tts_loadtest.studies.known_latency import main

if __name__ == "__main__":
    main()
