"""Cut the model's leading near-silence from a message's first audio, keeping the word's onset.

Kokoro starts every unit with about 0.3 s of near-silence (peaks under -40 dBFS): the listener of a
message's first unit waits through it after the first byte. :func:`trim_onset` drops it, so the
first audible sample (at or above -40 dBFS, :data:`bidi_tts.audio.AUDIBLE_DBFS`) comes about
``KEEP_S`` after the first sample sent.

A soft onset ("h", "f", "s", "th") rises through -55..-40 dBFS for a few milliseconds before its
first audible sample; measured on Kokoro int8 ONNX (af_heart: "Hello", "Five", "So", "She", "Thanks",
"Perhaps", "Welcome") the 5 ms windows above -55 dBFS begin 0-22 ms before it. The cut keeps
``KEEP_S`` before the first audible sample and, further back, every 5 ms window still above
``ONSET_DBFS`` (up to ``MAX_ONSET_S``), and fades in over ``FADE_S`` so the cut never clicks. Only the
part before the onset is ever faded or dropped.

Between units and at the end nothing is cut here: those pauses are the model's own prosody.
"""

from __future__ import annotations

import numpy as np

from bidi_tts.audio import AUDIBLE_DBFS, dbfs_to_level

KEEP_S = 0.025  # kept before the first audible sample
ONSET_DBFS = -55.0  # a 5 ms window louder than this is part of the onset
MAX_ONSET_S = 0.08  # the furthest back an onset is followed
FADE_S = 0.005
_WINDOW_S = 0.005


def trim_onset(audio: np.ndarray, rate: int) -> np.ndarray:
    """`audio` (float, full scale 1) without its leading near-silence; unchanged when no sample in
    it is audible (the silence is then not known to be leading: nothing is held back or dropped)."""
    x = np.asarray(audio)
    loud = np.flatnonzero(np.abs(x) >= dbfs_to_level(AUDIBLE_DBFS))
    if not loud.size:
        return audio
    first = int(loud[0])
    start = first
    window = max(1, int(_WINDOW_S * rate))
    floor = dbfs_to_level(ONSET_DBFS) ** 2
    limit = first - int(MAX_ONSET_S * rate)
    while start - window >= max(0, limit):
        chunk = x[start - window : start].astype(np.float64)
        if float(np.mean(chunk * chunk)) <= floor:
            break
        start -= window
    fade = int(FADE_S * rate)
    start = max(0, min(start - fade, first - int(KEEP_S * rate)))  # the fade ends before the onset
    if start == 0:
        return audio
    out = np.array(x[start:], dtype=x.dtype, copy=True)
    fade = min(fade, len(out))
    out[:fade] *= np.linspace(0.0, 1.0, fade, endpoint=False, dtype=out.dtype)
    return out
