"""`locust -f loadtest/locustfile.py`: the load test of `bidi_tts_loadtest.run.locustfile` (see there)."""

from bidi_tts_loadtest.run.locustfile import TTSUser

__all__ = ["TTSUser"]
