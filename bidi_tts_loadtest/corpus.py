"""The answers corpus under its old name, for `bench/gpu_bundle.py` (another issue rebuilds that file; it
should import :mod:`bidi_tts_loadtest.core.corpus`, and then this module goes)."""

from bidi_tts_loadtest.core.corpus import ANSWERS_PATH, load_answers

__all__ = ["ANSWERS_PATH", "load_answers"]
