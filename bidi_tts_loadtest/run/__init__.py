"""The Locust run: users, options, the SLO gate, the summary, reports, shapes, the live page and the
comparison of summaries (`locust -f loadtest/locustfile.py`, `bidi-tts-load`)."""
