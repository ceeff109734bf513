"""One shared int8 ONNX Kokoro (reference_container's synthesizer) for every stand-in in a process."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from reference_container.synthesizers.onnx_kokoro import OnnxKokoro

SAMPLE_RATE = 24_000
MAX_TOKENS = 510
_lock = threading.Lock()
_model: OnnxKokoro | None = None


def voices_dir() -> Path | None:
    configured = os.environ.get("KOKORO_VOICES_DIR")
    if configured:
        return Path(configured)
    for parent in Path(__file__).resolve().parents:  # ../shared beside the checkout (or a worktree's)
        if (parent / "shared" / "kokoro" / "voices").is_dir():
            return parent / "shared" / "kokoro" / "voices"
    return None


def model() -> OnnxKokoro:
    """The loaded synthesizer (loaded once, on first use)."""
    global _model
    with _lock:
        if _model is None:
            loaded = OnnxKokoro(voices_dir=voices_dir())
            loaded.load()
            _model = loaded
        return _model


def voice_names() -> frozenset[str]:
    return model().voices


def _pieces(phonemes: str) -> list[str]:
    """Phoneme strings of at most MAX_TOKENS symbols, cut at spaces (kokoro-onnx cuts at punctuation)."""
    out, rest = [], phonemes.strip()
    while len(rest) > MAX_TOKENS:
        cut = rest.rfind(" ", 0, MAX_TOKENS)
        cut = cut if cut > 0 else MAX_TOKENS
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return [*out, rest] if rest else out


def audio_for_phonemes(phonemes: str, voice: str, speed: float) -> np.ndarray:
    """Float32 audio at 24 kHz for a phoneme string (KeyError for a voice the bank lacks)."""
    kokoro = model()
    # OnnxKokoro.synthesize starts from text; kokoro-onnx's is_phonemes=True starts here, so this
    # reaches into the loaded session and bank (same inputs as OnnxKokoro.synthesize builds).
    pack = kokoro._bank.packs[voice]  # type: ignore[union-attr]
    chunks = []
    for piece in _pieces(phonemes):
        tokens = kokoro.tokens(piece)
        if tokens.shape[1] <= 2:
            continue
        style = pack[min(len(piece), len(pack)) - 1]
        (audio,) = kokoro._session.run(  # type: ignore[attr-defined]
            ["audio"], {"tokens": tokens, "style": style, "speed": np.array([speed], dtype=np.float32)})
        chunks.append(np.asarray(audio, dtype=np.float32).reshape(-1))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)


def audio_for_text(text: str, voice: str, speed: float = 1.0) -> np.ndarray:
    """Float32 audio at 24 kHz for English text (misaki G2P, then the model), all pieces joined."""
    chunks = list(model().synthesize(text, voice, speed))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
