"""One instance's concurrency ladder, closed or open loop, requests or sessions, and the published g5
ladder it is held against (`python -m bidi_tts_loadtest.ladder`)."""
