"""The torch route through the real KModel/KPipeline code, with a randomly initialised model.

The model is built from the real config.json and an empty state dict, with calibrated durations
(KOKORO_OFFLINE.md). It speaks noise, so nothing here judges audio quality: only that the real
loading, voice-tensor and pipeline code runs offline and gives audio of the expected length.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from reference_container import assets

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def torch_synth():
    if assets.find_config(None) is None:
        pytest.skip("no Kokoro config.json on this machine (../shared/kokoro or /opt/kokoro)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # any hub lookup would fail loudly
    from reference_container.synthesizers.torch_kokoro import TorchKokoro

    synth = TorchKokoro(device="cpu", random_init=True)
    synth.load()
    return synth


def test_random_init_runs_real_pipeline_with_expected_durations(torch_synth) -> None:
    assert "af_heart" in torch_synth.voices and torch_synth.device == "cpu"
    chunks = list(torch_synth.synthesize("Hello world.", "af_heart", 1.0))
    assert len(chunks) == 1 and chunks[0].dtype == np.float32
    phonemes = next(iter(torch_synth._pipelines.queue)).g2p("Hello world.")[0]
    # Calibrated durations: every token (phonemes + 2 boundary tokens) lasts 3 frames of 600 samples.
    assert len(chunks[0]) == (len(phonemes) + 2) * 3 * 600
    assert np.isfinite(chunks[0]).all()


def test_speed_and_voice_tensor(torch_synth) -> None:
    slow = sum(len(c) for c in torch_synth.synthesize("One two.", "am_adam", 0.5))
    normal = sum(len(c) for c in torch_synth.synthesize("One two.", "am_adam", 1.0))
    assert slow > 1.5 * normal
    # Voices are CPU float32 tensors, the only kind KPipeline.load_voice takes without a hub lookup.
    import torch

    assert isinstance(torch_synth._voices["am_adam"], torch.FloatTensor)


def test_calibration_sets_the_documented_bias(torch_synth) -> None:
    layer = torch_synth.model.predictor.duration_proj.linear_layer
    assert float(layer.weight.detach().abs().max()) == 0.0
    assert float(layer.bias.detach().mean()) == pytest.approx(np.log(0.056 / 0.944), rel=1e-5)


def test_building_the_model_emits_no_warnings(torch_synth) -> None:
    """kokoro builds its modules with the deprecated weight_norm (FutureWarning) and single-layer
    LSTMs with dropout (UserWarning); TorchKokoro.load silences exactly those two."""
    import warnings

    from reference_container.synthesizers.torch_kokoro import TorchKokoro

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TorchKokoro(device="cpu", random_init=True, workers=1).load()
    noisy = [w for w in caught if issubclass(w.category, (FutureWarning, UserWarning))]
    assert not noisy, [str(w.message) for w in noisy]
