"""`python -m bidi_tts_loadtest.bench_generator` (also `python -m loadtest.bench_generator`):
the command of :mod:`bidi_tts_loadtest.studies.bench_generator`."""

from bidi_tts_loadtest.studies.bench_generator import main

if __name__ == "__main__":
    main()
