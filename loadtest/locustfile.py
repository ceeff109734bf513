"""`locust -f loadtest/locustfile.py`: the load test of `bidi_tts_loadtest.locustfile` (see there)."""

from bidi_tts_loadtest.locustfile import TTSUser

__all__ = ["TTSUser"]
