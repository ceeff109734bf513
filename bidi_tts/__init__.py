"""bidi_tts: a client library for streaming text-to-speech over SageMaker bidirectional streaming.

The core (chunker, frames, protocol, session, sse, audio, metrics) does no I/O and reads no clock:
time comes in with each frame and call, as bytes do (tests/core/test_sans_io.py checks it). The
transports in :mod:`bidi_tts.transports` move bytes and stamp frames; :mod:`bidi_tts.wav_file` writes files.
"""

__version__ = "0.1.0"
