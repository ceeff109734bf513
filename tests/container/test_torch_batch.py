"""The first batching route (torch_batch: the text side batched, the decoder per item), kept for the GPU
bundle's first-run steps; and the container's torch route through its serving loop.

On the random-init model (sample for sample, within RTOL_OF_PEAK) and on the real weights rebuilt from
the int8 ONNX model (same durations, within REAL_LOG_MEL_DB / REAL_RMS_RATIO, heard as the same
words). Kokoro's source module draws random phases and noise (SineGen), so both sides run with those
draws pinned to zero; everything else is the real model code on the CPU.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from reference_container import assets

pytestmark = pytest.mark.slow

# Stated tolerance: float32 rounding between a padded batch and single calls stays within 1e-4 of the
# output's peak (the trained model's peak is ~1: about 3 int16 steps). Measured: ~5e-5.
RTOL_OF_PEAK = 1e-4
# With the real weights (rebuilt from the int8 ONNX model): see the test that states them.
REAL_LOG_MEL_DB = 0.5
REAL_RMS_RATIO = 0.10


@pytest.fixture(scope="module")
def torch_synth():
    if assets.find_config(None) is None:
        pytest.skip("no Kokoro config.json on this machine (../shared/kokoro or /opt/kokoro)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from reference_container.synthesizers.torch_kokoro import TorchKokoro

    synth = TorchKokoro(device="cpu", random_init=True, workers=2)
    synth.load()
    return synth


@pytest.fixture
def no_noise(monkeypatch):
    import torch

    monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.zeros(*a, **k))
    monkeypatch.setattr(torch, "randn_like", lambda x, **k: torch.zeros_like(x, **k))


def _phonemes(synth, text: str) -> str:
    if synth.loop is not None:  # the serving loop's route: G2P without a model pipeline
        return next(iter(synth._g2p.phonemes(text)))
    pipeline = next(iter(synth._pipelines.queue))
    return pipeline.g2p(text)[0]


def test_batched_forward_equals_unbatched(torch_synth, no_noise) -> None:
    import torch

    from reference_container.synthesizers.torch_batch import ModelCall, batched_forward

    texts = ["Hi there.", "The quick brown fox jumps over the lazy dog.", "Shall we go?"]
    voices = ["af_heart", "am_adam", "af_heart"]
    speeds = [1.0, 1.3, 0.8]
    calls = []
    for text, voice, speed in zip(texts, voices, speeds, strict=True):
        ps = _phonemes(torch_synth, text)
        calls.append(ModelCall(ps, torch_synth._voices[voice][len(ps) - 1], speed))
    model = torch_synth.model
    with torch.inference_mode():
        batched = batched_forward(model, calls)
        single = [model(c.phonemes, c.ref_s, c.speed, return_output=True) for c in calls]
    for b, s in zip(batched, single, strict=True):
        assert b.pred_dur.tolist() == s.pred_dur.tolist()
        assert b.audio.shape == s.audio.shape
        peak = float(np.abs(s.audio.numpy()).max())
        assert np.abs(b.audio.numpy() - s.audio.numpy()).max() <= RTOL_OF_PEAK * peak
    # Items really differ in length, so padding and masks were exercised.
    assert len({len(b.audio) for b in batched}) == 3


def test_batcher_fills_batches_and_a_full_batch_does_not_wait_the_window(torch_synth) -> None:
    from reference_container.synthesizers.torch_batch import Batcher

    ps = _phonemes(torch_synth, "Hello world.")
    ref = torch_synth._voices["af_heart"][len(ps) - 1]
    batcher = Batcher(torch_synth.model, window_s=30.0, max_batch=2)  # the window would time the test out
    results: list[object] = []
    started = time.perf_counter()
    threads = [threading.Thread(target=lambda: results.append(batcher(ps, ref, 1.0))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=25)
    assert len(results) == 2 and batcher.batch_sizes == [2]
    assert time.perf_counter() - started < 25

    alone = Batcher(torch_synth.model, window_s=0.0, max_batch=4)
    assert len(alone(ps, ref, 1.0).audio) > 0 and alone.batch_sizes == [1]


def test_container_synthesizer_uses_the_serving_loop(torch_synth) -> None:
    from reference_container.synthesizers.torch_kokoro import TorchKokoro

    synth = TorchKokoro(device="cpu", random_init=True, workers=2, batch_window_ms=5)
    synth.load()
    chunks = list(synth.synthesize("Hello world.", "af_heart", 1.0))
    assert synth.loop is not None and [p.size for p in synth.loop.passes] == [1]
    assert sum(len(c) for c in chunks) == sum(len(c) for c in torch_synth.synthesize("Hello world.", "af_heart", 1.0))


@pytest.fixture(scope="module")
def real_synth():
    """The torch route with real weights (rebuilt from the int8 ONNX model; see torch_weights)."""
    if assets.find_config(None) is None:
        pytest.skip("no Kokoro config.json on this machine (../shared/kokoro or /opt/kokoro)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from reference_container.synthesizers.torch_kokoro import TorchKokoro

    synth = TorchKokoro(device="cpu", workers=2, batch_window_ms=5)
    synth.load()
    assert synth.converted  # no fp32 checkpoint here: the weights came from the ONNX model
    return synth


def _real_calls(synth) -> tuple[list[str], list]:
    from reference_container.synthesizers.torch_batch import ModelCall

    texts = ["Thank you for calling.", "The quick brown fox jumps over the lazy dog.", "See you tomorrow."]
    calls = []
    for text, voice, speed in zip(texts, ["af_heart", "am_adam", "bf_emma"], [1.0, 1.2, 0.9], strict=True):
        ps = _phonemes(synth, text)
        calls.append(ModelCall(ps, synth._voices[voice][len(ps) - 1], speed))
    return texts, calls


def _rms_ratio(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(((a - b) ** 2).mean() / (b**2).mean()))


def test_batched_equals_unbatched_with_real_weights_and_is_heard_the_same(real_synth, no_noise) -> None:
    """Real weights: the same durations, and audio within REAL_* of the unbatched audio.

    With trained weights float rounding does not stay at 1e-4 of the peak: the vocoder integrates F0
    into a phase, so a rounding difference in F0 becomes a slowly growing phase difference. Measured on
    these three items: RMS difference 1.6-2.5% of the signal's RMS, DTW log-mel distance 0.05-0.07 dB
    (the ONNX route is 3.3-3.6 dB from the torch route; a mix-up of styles, the control below, is far
    above). Stated tolerance: REAL_LOG_MEL_DB and REAL_RMS_RATIO.
    """
    import torch

    from bidi_tts_hearing import recognizer, unavailable_reason
    from bidi_tts_hearing.text import word_error_rate
    from reference_container.synthesizers.torch_batch import batched_forward
    from tests.container.spectral import log_mel_distance_db

    texts, calls = _real_calls(real_synth)
    with torch.inference_mode():
        batched = batched_forward(real_synth.model, calls)
        single = [real_synth.model(c.phonemes, c.ref_s, c.speed, return_output=True) for c in calls]
    for b, s in zip(batched, single, strict=True):
        assert b.pred_dur.tolist() == s.pred_dur.tolist()
        peak = float(np.abs(s.audio.numpy()).max())
        assert 0.05 < peak <= 1.5  # trained weights: speech at a normal level, not noise or silence
        assert log_mel_distance_db(b.audio.numpy(), s.audio.numpy()) <= REAL_LOG_MEL_DB
        assert _rms_ratio(b.audio.numpy(), s.audio.numpy()) <= REAL_RMS_RATIO
    assert len({len(b.audio) for b in batched}) == 3
    if (reason := unavailable_reason()) is not None:
        pytest.skip(reason)
    ears = recognizer()

    def heard(audio) -> str:
        pcm = (np.clip(audio.numpy(), -1, 1) * 32767).astype("<i2").tobytes()
        return ears.transcribe(pcm, 24_000)

    for text, b, s in zip(texts, batched, single, strict=True):
        heard_batched, heard_single = heard(b.audio), heard(s.audio)
        assert word_error_rate(text, heard_single) <= 0.2, heard_single
        assert word_error_rate(heard_single, heard_batched) == 0.0, (heard_single, heard_batched)


def test_the_real_weights_tolerance_rejects_a_batch_that_mixes_up_styles(real_synth, no_noise) -> None:
    import torch

    from reference_container.synthesizers.torch_batch import ModelCall, batched_forward
    from tests.container.spectral import log_mel_distance_db

    _, calls = _real_calls(real_synth)
    first, last = calls[0], calls[2]
    broken = [ModelCall(first.phonemes, last.ref_s, first.speed), calls[1], ModelCall(last.phonemes, first.ref_s,
                                                                                     last.speed)]
    with torch.inference_mode():
        wrong = batched_forward(real_synth.model, broken)
        single = real_synth.model(first.phonemes, first.ref_s, first.speed, return_output=True)
    a, b = wrong[0].audio.numpy(), single.audio.numpy()
    assert log_mel_distance_db(a, b) > REAL_LOG_MEL_DB or len(a) != len(b)
    if len(a) == len(b):
        assert _rms_ratio(a, b) > REAL_RMS_RATIO


def test_serving_loop_serves_real_weights(real_synth) -> None:
    chunks = list(real_synth.synthesize("Hello world.", "af_heart", 1.0))
    assert real_synth.loop is not None and real_synth.loop.passes[-1].size == 1
    audio = np.concatenate(chunks)
    assert 0.4 < len(audio) / 24_000 < 3 and np.isfinite(audio).all()
