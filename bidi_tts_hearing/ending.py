"""Is the end of a message's audio cut off? Judged on the audio itself, not on a recognizer.

A recognizer completes a cut-off sentence from context (Whisper heard "It was a very cold winter."
in audio that stopped at "It was a very co"), so its transcript cannot show a missing end. The audio
can: speech ends by decaying to silence (the last phoneme fades, then a pause), while audio cut in
the middle of a sound stops at full loudness. This module measures the level of the audio's last
few milliseconds against the level of its speech.

No model, only numpy: usable by any case that receives speech.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bidi_tts.audio import level_to_dbfs, pcm16_to_float

FRAME_S = 0.010  # the envelope's resolution
TAIL_S = 0.020  # the end judged: the last 20 ms
SPEECH_PERCENTILE = 90  # the speech's level: the 90th percentile of the 10 ms frames' RMS
# Cut off when the last 20 ms are louder than this, relative to the speech (natural ends of espeak-ng and
# Kokoro speech measure about -80 dB; a cut inside a sound -28 dB and louder, most above -15 dB).
# A cut that lands in a pause between words leaves a quiet end: that one the recognizer's cases judge
# (the words after it are missing, not guessed).
CUT_DB = -40.0


@dataclass(frozen=True, slots=True)
class Ending:
    """How the audio ends: the level of its last TAIL_S against its speech level, in dB."""

    tail_db: float
    seconds: float

    @property
    def cut(self) -> bool:
        return self.tail_db > CUT_DB

    def describe(self) -> str:
        return (f"the end is truncated: the audio stops mid-sound: its last {TAIL_S * 1000:.0f} ms are at "
                f"{self.tail_db:.0f} dB of the speech, with no decay to silence (natural ends are below "
                f"{CUT_DB:.0f} dB)")


def ending(pcm: bytes | bytearray, sample_rate: int) -> Ending | None:
    """How s16le mono `pcm` ends, or None when there is too little audio or no sound to judge."""
    usable = len(pcm) - len(pcm) % 2
    samples = pcm16_to_float(bytes(pcm[:usable])).astype(np.float64)
    frame = max(1, int(FRAME_S * sample_rate))
    frames = len(samples) // frame
    if frames < 10:
        return None
    envelope = np.sqrt(np.mean(samples[: frames * frame].reshape(frames, frame) ** 2, axis=1))
    level = float(np.percentile(envelope, SPEECH_PERCENTILE))
    if level < 1e-4:  # silence: nothing to judge (audio.sound.1's business)
        return None
    tail = samples[-max(1, int(TAIL_S * sample_rate)):]
    tail_rms = float(np.sqrt(np.mean(tail ** 2)))
    tail_db = level_to_dbfs(max(tail_rms, 1e-9) / level)
    return Ending(round(tail_db, 1), len(samples) / sample_rate)
