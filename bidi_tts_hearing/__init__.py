"""Hearing what a container says: a speech recognizer behind a small seam, and the judgement of its
transcripts (normalized word error rate; which sentences were dropped, repeated, swapped or cut).

The recognizer is loaded lazily, once per process, by :func:`recognizer`; where faster-whisper or the
model packages are missing, :func:`unavailable_reason` says how to install them.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from bidi_tts_hearing.model_files import INSTALL_HINT, ModelUnavailable

if TYPE_CHECKING:
    from bidi_tts_hearing.alignment import Hearing, hear
    from bidi_tts_hearing.text import normalize, word_error_rate

# Imported on first use: they need the 'hearing' extra (jiwer, num2words), and importing this package
# must work without it so that the cases can say how to install it.
_LAZY = {"Hearing": "alignment", "hear": "alignment", "normalize": "text", "word_error_rate": "text"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"bidi_tts_hearing.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Recognizer(Protocol):
    """Speech in, words out."""

    def transcribe(self, pcm: bytes, sample_rate: int) -> str:
        """The transcript of s16le mono PCM at `sample_rate`."""
        ...


def transcribe_each(ears: Recognizer, clips: Sequence[tuple[bytes | bytearray, int]]) -> list[str]:
    """One transcript per (pcm, sample_rate) clip; in one pass where the recognizer can pack clips."""
    many = getattr(ears, "transcribe_many", None)
    if many is not None:
        return list(many(clips))
    return [ears.transcribe(bytes(pcm), rate) for pcm, rate in clips]


_lock = threading.Lock()
_recognizer: Recognizer | None = None
_failure: str | None = None


def recognizer() -> Recognizer:
    """The process's recognizer (faster-whisper; $BIDI_TTS_WHISPER_MODEL picks another model).

    Raises :class:`ModelUnavailable` with an install hint when it cannot be loaded.
    """
    global _recognizer, _failure
    with _lock:
        if _recognizer is None and _failure is None:
            try:
                importlib.import_module("bidi_tts_hearing.alignment")  # jiwer, num2words
                from bidi_tts_hearing.whisper import WhisperRecognizer

                _recognizer = WhisperRecognizer()
            except ModuleNotFoundError as exc:
                _failure = exc.msg if INSTALL_HINT in exc.msg else f"{exc.name} is not installed; {INSTALL_HINT}"
            except ModelUnavailable as exc:
                _failure = str(exc)
            except (RuntimeError, OSError, ValueError) as exc:  # CTranslate2 refusing a model folder
                _failure = f"the speech recognizer could not load its model: {exc}"
        if _recognizer is None:
            raise ModelUnavailable(_failure or INSTALL_HINT)
        return _recognizer


def unavailable_reason() -> str | None:
    """Why no recognizer can be loaded in this process, or None when one can."""
    try:
        recognizer()
    except ModelUnavailable as exc:
        return str(exc)
    return None


__all__ = ["INSTALL_HINT", "Hearing", "ModelUnavailable", "Recognizer", "hear", "normalize", "recognizer",
           "transcribe_each", "unavailable_reason", "word_error_rate"]
