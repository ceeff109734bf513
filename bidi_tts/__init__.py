"""bidi_tts: a client library for streaming text-to-speech over SageMaker bidirectional streaming.

The core (chunker, frames, protocol, session, sse, audio, metrics) does no I/O; the transports in
:mod:`bidi_tts.transports` move bytes.
"""

__version__ = "0.1.0"
