"""The whole model batched over units of different lengths equals each unit's unbatched call.

Real weights (rebuilt from the int8 ONNX model), the reference being kokoro's own
``KModel.forward_with_tokens`` per unit under the same noise: each unit's generator is seeded as the
unbatched call's global generator is, and draws the same shapes in the same order.

Stated tolerance: in float64 every item equals its unbatched audio within 1e-6 of its peak
(measured 2026-12-04: 6.6e-8 to 9.2e-8, the float32 rounding of the output). Float64, because
float32 rounding in a padded batch (other matrix widths, other reduction orders) moves the F0 curve
by about 1e-7, and the harmonic source accumulates phase over every sample: 0.5-4% of the peak after
a few seconds, which would hide the edge masks. Removing any one mask breaks it: measured
2026-12-04 on 5/20/40-token units, the smallest miss was 8.5e-6 (the inverse STFT's frames), the
others 1.8e-4 to a wrong length. CPU cost: about 5 minutes on two busy cores (float64).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from reference_container import assets

pytestmark = pytest.mark.slow

TOLERANCE_OF_PEAK = 1e-6
LENGTHS = (5, 14, 26)  # tokens, the two zeros included
SPEEDS = (1.0, 1.15, 0.9)
VOICES = ("af_heart", "am_adam", "bf_emma")


@pytest.fixture(scope="module")
def model():
    import torch

    from reference_container import torch_weights

    config = assets.find_config(None)
    if config is None:
        pytest.skip("no Kokoro config.json on this machine (../shared/kokoro or /opt/kokoro)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    path = assets.converted_torch_weights(config, None, None)
    kmodel = torch_weights.empty_kmodel(json.loads(config.read_text(encoding="utf-8")))
    kmodel.load_state_dict(torch_weights.flatten(torch.load(path, map_location="cpu", weights_only=True)),
                           strict=True)
    return kmodel.eval().double()


@pytest.fixture(scope="module")
def units(model):
    import torch

    packs = assets.find_voices(None, allow_hub=False, default_voice="af_heart").packs
    rng = np.random.default_rng(7)
    symbols = [i for s, i in model.vocab.items() if s.isalpha()]
    made = []
    for n, speed, voice in zip(LENGTHS, SPEEDS, VOICES, strict=True):
        ids = [0, *(int(i) for i in rng.choice(symbols, n - 2)), 0]
        made.append((ids, torch.from_numpy(packs[voice][n - 3].copy()).double(), speed, 1000 + n))
    return made


@pytest.fixture(scope="module")
def unbatched(model, units):
    import torch

    out = []
    with torch.inference_mode(), _float64():
        for ids, ref_s, speed, seed in units:
            torch.manual_seed(seed)
            audio, _ = model.forward_with_tokens(torch.tensor([ids]), ref_s, speed)
            out.append(audio.float().numpy())
    return out


class _float64:
    """kokoro makes some tensors with the default dtype; the reference runs wholly in float64."""

    def __enter__(self) -> None:
        import torch

        self._old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.set_default_dtype(self._old)


def _batched(model, units, skip=frozenset()):
    import torch

    from reference_container.synthesizers.kokoro_batched import Unit, forward_batch

    batch = [Unit(ids, ref_s, speed, torch.Generator().manual_seed(seed)) for ids, ref_s, speed, seed in units]
    with torch.inference_mode(), _float64():
        return forward_batch(model, batch, skip=skip)


def _misses(out, unbatched) -> list[str]:
    """What differs beyond the tolerance, per item (empty: every item equal)."""
    misses = []
    for row, (got, want) in enumerate(zip(out.audio, unbatched, strict=True)):
        got = got.numpy()
        if got.shape != want.shape:
            misses.append(f"item {row}: {got.shape[0]} samples, unbatched {want.shape[0]}")
            continue
        err = float(np.abs(got - want).max() / np.abs(want).max())
        if err > TOLERANCE_OF_PEAK:
            misses.append(f"item {row}: off by {err:.2e} of its peak")
    return misses


def test_mixed_lengths_equal_unbatched_per_item(model, units, unbatched) -> None:
    out = _batched(model, units)
    assert len(set(out.frames)) == len(units), "the units must differ in length, or nothing is padded"
    assert out.padded_frames * len(units) > sum(out.frames)
    assert _misses(out, unbatched) == []


@pytest.mark.parametrize("mask", ["norm_stats", "conv_edges", "lstm_lengths", "source_noise", "stft_edge",
                                  "har_frames", "istft_frames", "audio_length"])
def test_each_mask_matters(model, units, unbatched, mask) -> None:
    # the two shorter units: one of them padded is all a mask needs, at a third of the cost
    assert _misses(_batched(model, units[:2], skip=frozenset({mask})), unbatched[:2]), f"{mask} changed nothing"


def test_masks_listed_are_the_masks_tested() -> None:
    from reference_container.synthesizers.kokoro_masked import MASKS

    assert set(MASKS) == {"norm_stats", "conv_edges", "lstm_lengths", "source_noise", "stft_edge",
                          "har_frames", "istft_frames", "audio_length"}


def test_float32_single_unit_is_kokoros_own_call(model, units) -> None:
    """Without padding, in the container's precision, the batched code is KModel's arithmetic."""
    import torch

    from reference_container.synthesizers.kokoro_batched import Unit, forward_batch

    single = model.float()
    try:
        ids, ref_s, speed, seed = units[-1]
        with torch.inference_mode():
            torch.manual_seed(seed)
            want, _ = single.forward_with_tokens(torch.tensor([ids]), ref_s.float(), speed)
            got = forward_batch(single, [Unit(ids, ref_s.float(), speed, torch.Generator().manual_seed(seed))])
        want = want.numpy()
        assert got.audio[0].shape == want.shape
        assert float(np.abs(got.audio[0].numpy() - want).max() / np.abs(want).max()) < 1e-5
    finally:
        model.double()


def test_precision_modes_say_what_the_cpu_supports() -> None:
    from reference_container.synthesizers.kokoro_batched import precision, precision_support

    assert precision_support("cpu")["fp32"] == "ok"
    assert "CUDA" in precision_support("cpu")["tf32"]
    with pytest.raises(ValueError, match="bf16 on cpu"):
        with precision("bf16", "cpu"):
            pass
    with pytest.raises(ValueError, match="unknown precision"):
        with precision("fp16", "cpu"):
            pass
