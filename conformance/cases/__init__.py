"""The conformance cases. Importing this package registers every case in REGISTRY, in order."""

from conformance.cases import (  # noqa: F401  (imported for their registrations)
    health,
    frames,
    audio,
    session,
    close,
    errors,
    isolation,
    post,
    cancel,
    sagemaker,
    robust,
)
from conformance.model import REGISTRY

__all__ = ["REGISTRY"]
