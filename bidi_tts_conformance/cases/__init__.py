"""The conformance cases. Importing this package registers every case in REGISTRY, in report order."""

# The import order is the order of the cases in every report: keep it, do not sort it.
from bidi_tts_conformance.cases import health, busy, frames, audio, session, close, errors  # noqa: F401, I001
from bidi_tts_conformance.cases import isolation, post, cancel, sagemaker, robust  # noqa: F401
from bidi_tts_conformance.cases import voice  # noqa: F401
from bidi_tts_conformance.cases import post_reader, admission  # noqa: F401
from bidi_tts_conformance.cases import content  # noqa: F401
from bidi_tts_conformance.cases import stop  # noqa: F401  (last: stop.sigterm.1 ends the container)
from bidi_tts_conformance.model import REGISTRY

__all__ = ["REGISTRY"]
