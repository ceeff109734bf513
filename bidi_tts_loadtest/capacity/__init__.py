"""The capacity sweep: sessions held per container configuration, and the calibration of a timed
profile from a running container (`python -m bidi_tts_loadtest.capacity`)."""
