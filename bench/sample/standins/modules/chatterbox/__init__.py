"""STAND-IN for Resemble AI's `chatterbox-tts` (not installed here; needs CUDA): see tts_turbo."""
