"""Load test for streaming-TTS containers on SageMaker bidirectional streaming.

    uv run locust -f loadtest/locustfile.py --headless -u 10 -r 10 --run-time 1m \\
        --host http://127.0.0.1:8080 --summary-json out/summary.json --slo-ttfa-p95-ms 300

or ``--endpoint-name NAME --region R [--endpoint-url URL --endpoint-ca ca.pem]`` for a SageMaker
endpoint. See docs/loadtest.md for the options, shapes, distributed runs and reports.
"""

from bidi_tts_loadtest.run import plugin as _plugin  # noqa: F401  (registers options, events, the SLO gate)
from bidi_tts_loadtest.run.users import TTSUser

__all__ = ["TTSUser"]
