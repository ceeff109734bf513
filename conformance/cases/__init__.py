"""The conformance cases. Importing this package registers every case in REGISTRY, in order."""

from conformance.cases import (  # noqa: F401  (imported for their registrations)
    audio,
    cancel,
    close,
    errors,
    frames,
    health,
    isolation,
    post,
    robust,
    sagemaker,
    session,
)
from conformance.model import REGISTRY

__all__ = ["REGISTRY"]
