"""Why sessions fail, in a few stable words, and a log that says each cause once.

A run with a broken setup fails every session the same way; logging each one floods the log and
hides the cause. Each distinct cause is logged the first time it happens (with its detail) and
counted; the summary and the end-of-run log carry one line per cause with its count.
"""

from __future__ import annotations

import logging
from collections import Counter

from bidi_tts.transports.base import ConnectError, TransportClosed, TransportError, TransportTimeout

log = logging.getLogger("loadtest")

CREDENTIALS, REGION, BAD_TARGET, REFUSED = "credentials", "region", "bad target", "refused"
STREAM_ERROR, TIMEOUT, CUT = "stream error", "timeout", "cut by run end"
#: Causes no retry can fix: the run stops at the first one instead of failing every session.
FATAL = frozenset({CREDENTIALS, REGION, BAD_TARGET})


def cause_of(exc: BaseException) -> str:
    """The stable word for why a session failed with `exc`."""
    from bidi_tts.transports.sagemaker import SageMakerConfigError, SageMakerCredentialsError

    match exc:
        case SageMakerCredentialsError():
            return CREDENTIALS
        case SageMakerConfigError():
            return REGION
        case ValueError():
            return BAD_TARGET
        case ConnectError():
            return REFUSED
        case TransportTimeout():
            return TIMEOUT
        case TransportClosed() | TransportError():
            return STREAM_ERROR
    return STREAM_ERROR


class FailureLog:
    """Counts failures by cause; logs a cause only the first time it is seen."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.first_detail: dict[str, str] = {}

    def note(self, cause: str, detail: str) -> None:
        self.counts[cause] += 1
        if cause not in self.first_detail:
            self.first_detail[cause] = detail
            log.warning("bidi-tts: session failed (%s): %s [further '%s' failures are counted, not logged]",
                        cause, detail, cause)
