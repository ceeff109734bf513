"""The faster-whisper Recognizer: s16le PCM at any rate in, a transcript out."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from bidi_tts_hearing.model_files import INSTALL_HINT, whisper_base_dir

WHISPER_RATE = 16_000
WINDOW_S = 28.0  # Whisper hears 30 s at a time; clips packed together stay inside one window
GAP_S = 1.0  # silence between packed clips: enough for word timestamps to fall clearly on one side
MODEL_ENV = "BIDI_TTS_WHISPER_MODEL"


def pcm_to_whisper(pcm: bytes | bytearray, sample_rate: int) -> np.ndarray:
    """s16le mono PCM at `sample_rate` as float32 in [-1, 1] at 16 kHz (soxr, high quality)."""
    import soxr

    usable = len(pcm) - len(pcm) % 2
    samples = np.frombuffer(bytes(pcm[:usable]), dtype="<i2").astype(np.float32) / 32768.0
    if sample_rate != WHISPER_RATE and samples.size:
        samples = soxr.resample(samples, sample_rate, WHISPER_RATE, quality="HQ").astype(np.float32)
    return samples


class WhisperRecognizer:
    """English transcription with faster-whisper (CTranslate2), greedy decoding, int8 on CPU.

    `model` is a faster-whisper model folder or name; by default $BIDI_TTS_WHISPER_MODEL, else the
    offline Whisper base assembled from the part packages. A model name (e.g. "small.en") is
    downloaded by faster-whisper, so it needs network; a folder never does.
    """

    def __init__(self, model: str | None = None, *, device: str = "cpu", compute_type: str = "int8",
                 cpu_threads: int = 0) -> None:
        try:
            from faster_whisper import WhisperModel
        except ModuleNotFoundError:
            raise ModuleNotFoundError(f"faster-whisper is not installed; {INSTALL_HINT}") from None
        self.model_name = model or os.environ.get(MODEL_ENV) or str(whisper_base_dir())
        self._model = WhisperModel(self.model_name, device=device, compute_type=compute_type,
                                   cpu_threads=cpu_threads, local_files_only=os.path.isdir(self.model_name))

    def _segments(self, audio: np.ndarray, *, word_timestamps: bool) -> list:
        # Greedy, one temperature, not conditioned on earlier windows and no VAD: deterministic, and a
        # repeat or a drop stays audible as such.
        segments, _ = self._model.transcribe(audio, language="en", beam_size=1, best_of=1, temperature=0.0,
                                             condition_on_previous_text=False, vad_filter=False,
                                             without_timestamps=not word_timestamps,
                                             word_timestamps=word_timestamps)
        return list(segments)

    def transcribe(self, pcm: bytes | bytearray, sample_rate: int) -> str:
        audio = pcm_to_whisper(pcm, sample_rate)
        if audio.size < WHISPER_RATE // 10:
            return ""
        return " ".join(s.text.strip() for s in self._segments(audio, word_timestamps=False)).strip()

    def transcribe_many(self, clips: Sequence[tuple[bytes | bytearray, int]]) -> list[str]:
        """Transcripts of several clips, packed with silence between them into as few 30 s windows as fit.

        Whisper's cost is mostly per window, so this is much cheaper than one call per clip; each word
        goes to the clip its timestamp falls in.
        """
        audio = [pcm_to_whisper(pcm, rate) for pcm, rate in clips]
        texts: list[list[str]] = [[] for _ in audio]
        batch: list[int] = []

        def flush() -> None:
            gap = np.zeros(int(GAP_S * WHISPER_RATE), np.float32)
            bounds, pieces, at = [], [], 0.0
            for k in batch:
                bounds.append((at - GAP_S / 2, at + audio[k].size / WHISPER_RATE + GAP_S / 2, k))
                pieces += [audio[k], gap]
                at += audio[k].size / WHISPER_RATE + GAP_S
            for segment in self._segments(np.concatenate(pieces), word_timestamps=True):
                for word in segment.words or []:
                    middle = (word.start + word.end) / 2
                    k = next((k for lo, hi, k in bounds if lo <= middle < hi), bounds[-1][2])
                    texts[k].append(word.word.strip())
            batch.clear()

        for k, clip in enumerate(audio):
            length = sum(audio[j].size / WHISPER_RATE + GAP_S for j in batch)
            if batch and length + clip.size / WHISPER_RATE > WINDOW_S:
                flush()
            if clip.size >= WHISPER_RATE // 10:
                batch.append(k)
        if batch:
            flush()
        return [" ".join(t) for t in texts]
