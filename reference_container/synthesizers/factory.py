"""Choose and build the synthesizer from the settings.

`auto` picks torch when a CUDA device and local torch weights are both present (the production
image), else the int8 ONNX route, which needs nothing but PyPI packages and runs well on a CPU.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
from collections.abc import Iterator

import numpy as np

from reference_container import assets
from reference_container.settings import Settings
from reference_container.synthesizers.base import Synthesizer
from reference_container.synthesizers.onnx_kokoro import OnnxKokoro

log = logging.getLogger(__name__)


# Where an NVIDIA driver shows itself on Linux (/proc for the kernel module, /dev for a container run
# with the NVIDIA runtime, WSL's library folder); with none of them torch cannot see a GPU either.
_DRIVER_SIGNS = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/usr/lib/wsl/lib/libcuda.so.1")


def nvidia_driver_present() -> bool:
    """Whether this machine shows an NVIDIA driver, asked without importing torch (seconds)."""
    return any(os.path.exists(sign) for sign in _DRIVER_SIGNS) or ctypes.util.find_library("cuda") is not None


def _cuda_available() -> bool:
    if not nvidia_driver_present():
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # a broken torch install means: no CUDA
        return False


def choose_backend(settings: Settings) -> str:
    """The backend `auto` resolves to on this machine."""
    if settings.backend != "auto":
        return settings.backend
    if settings.device != "cpu" and _cuda_available() and (
        assets.find_torch_weights(settings.weights_dir) or os.environ.get("KOKORO_TORCH_RANDOM_INIT") == "1"
    ):
        return "torch"
    return "onnx"


def build_synthesizer(settings: Settings) -> Synthesizer:
    """The synthesizer the settings ask for (not loaded yet)."""
    backend = choose_backend(settings)
    log.info("event=backend_chosen requested=%s backend=%s", settings.backend, backend)
    if backend == "timed":
        from reference_container.synthesizers.timed import TimedSynthesizer
        from reference_container.synthesizers.timed_profile import load_profile

        return TimedSynthesizer(load_profile(settings.timed_profile or ""), workers=settings.synth_workers,
                                batch_window_ms=settings.batch_window_ms, batch_max=settings.batch_max,
                                batch_tokens=settings.batch_tokens, g2p_processes=settings.g2p_processes)
    if backend == "torch":
        from reference_container.synthesizers.torch_kokoro import TorchKokoro  # imports torch

        return TorchKokoro(
            voices_dir=settings.voices_dir, weights_dir=settings.weights_dir, cache_dir=settings.cache_dir,
            device=settings.device,
            workers=settings.synth_workers, default_voice=settings.default_voice,
            batch_window_ms=settings.batch_window_ms, batch_max=settings.batch_max,
            batch_tokens=settings.batch_tokens, g2p_processes=settings.g2p_processes, precision=settings.precision,
            # Timing runs with no trained weights (GPU benchmarks); documented in torch_kokoro.
            random_init=os.environ.get("KOKORO_TORCH_RANDOM_INIT") == "1",
        )
    return OnnxKokoro(
        voices_dir=settings.voices_dir, weights_dir=settings.weights_dir, cache_dir=settings.cache_dir,
        threads=settings.onnx_threads, default_voice=settings.default_voice,
    )


class DeferredSynthesizer:
    """Chooses and loads the backend inside :meth:`load`, so the server listens before torch imports."""

    sample_rate = 24_000

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._inner: Synthesizer | None = None

    @property
    def name(self) -> str:
        return self._inner.name if self._inner else "loading"

    @property
    def voices(self) -> frozenset[str]:
        return self._inner.voices if self._inner else frozenset()

    @property
    def inner(self) -> Synthesizer | None:
        return self._inner

    def load(self) -> None:
        inner = build_synthesizer(self._settings)
        inner.load()
        self._inner = inner

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        if self._inner is None:
            raise RuntimeError("synthesizer used before load()")
        return self._inner.synthesize(text, voice, speed)
