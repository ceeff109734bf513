"""What the two Kokoro synthesizers (:mod:`.onnx_kokoro`, :mod:`.torch_kokoro`) share: where their voices and
weights are found, the voice spoken when none is named, and the voice bank once loaded."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from reference_container import assets


class KokoroOptions(TypedDict, total=False):
    """The keyword options both Kokoro synthesizers take besides their own: see :class:`KokoroBase`."""

    voices_dir: Path | None
    weights_dir: Path | None
    cache_dir: Path | None
    default_voice: str


class KokoroBase:
    """Kokoro-82M's files and voices: `voices_dir`, `weights_dir` and `cache_dir` as :mod:`..assets` reads
    them (None: its search order), `default_voice` the voice :func:`assets.find_voices` makes sure of."""

    sample_rate = 24_000

    def __init__(self, *, voices_dir: Path | None = None, weights_dir: Path | None = None,
                 cache_dir: Path | None = None, default_voice: str = "af_heart") -> None:
        self._voices_dir = voices_dir
        self._weights_dir = weights_dir
        self._cache_dir = cache_dir
        self._default_voice = default_voice
        self._bank: assets.VoiceBank | None = None

    @property
    def voice_source(self) -> str:
        return self._bank.source if self._bank else ""

    def _load_voices(self, *, allow_hub: bool) -> assets.VoiceBank:
        """The voice bank (loaded now, kept for `voice_source`); the hub is asked only when `allow_hub`."""
        self._bank = assets.find_voices(self._voices_dir, allow_hub=allow_hub, default_voice=self._default_voice)
        return self._bank
