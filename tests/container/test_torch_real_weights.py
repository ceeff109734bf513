"""The torch route with real weights rebuilt from the int8 ONNX model speaks like the ONNX route.

Each check comes with a control: the same measure on a wrong mapping (two decoder blocks swapped;
one LSTM's gates left in ONNX order) must fail it, so the tolerance cannot pass just anything.
Tolerances and the measurement behind them: tests/container/real_weights.py, bench/container/torch_vs_onnx.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from reference_container import assets
from tests.container import real_weights as rw

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def routes() -> rw.Routes:
    if assets.find_config(None) is None:
        pytest.skip("no Kokoro config.json on this machine (../shared/kokoro or /opt/kokoro)")
    return rw.Routes()


@pytest.fixture(scope="module")
def pairs(routes: rw.Routes) -> list[rw.Pair]:
    return [routes.pair(text, voice) for voice in rw.VOICES for text in rw.SENTENCES[:2]]


@pytest.fixture(scope="module")
def ears():
    from bidi_tts_hearing import recognizer, unavailable_reason

    if (reason := unavailable_reason()) is not None:
        pytest.skip(reason)
    return recognizer()


def test_every_kmodel_tensor_is_placed_and_loads_strictly(routes: rw.Routes) -> None:
    import torch

    # Routes.kmodel loads with strict=True; here: nothing non-finite, and a trained tensor is not empty.
    assert all(torch.isfinite(v).all() for v in routes.state.values())
    assert len(routes.model.state_dict()) == len(routes.state) == 688
    w = routes.state["predictor.lstm.weight_ih_l0"]
    assert w.shape == (1024, 640) and float(w.abs().mean()) > 0


def test_the_converter_names_what_it_cannot_place(routes: rw.Routes) -> None:
    from reference_container import torch_weights as tw

    onnx_path = assets.onnx_model_path(None, None)
    target = {k: tuple(v.shape) for k, v in routes.state.items()}
    missing = r"1 KModel tensors not found in the ONNX file: decoder\.extra\.weight"
    with pytest.raises(tw.ConversionError, match=missing):
        tw.convert(onnx_path, target | {"decoder.extra.weight": (3,)})
    del target["predictor.duration_proj.linear_layer.weight"]  # placed from an anonymous onnx:: matmul
    with pytest.raises(tw.ConversionError, match=r"duration_proj\.linear_layer\.weight.*KModel does not have"):
        tw.convert(onnx_path, target)


def test_durations_match_within_tolerance(pairs: list[rw.Pair]) -> None:
    for pair in pairs:
        assert abs(pair.duration_ratio - 1) <= rw.DURATION_TOLERANCE, (pair.voice, pair.text, pair.duration_ratio)


def test_log_mel_distance_within_tolerance(pairs: list[rw.Pair]) -> None:
    for pair in pairs:
        assert pair.log_mel_db <= rw.LOG_MEL_TOLERANCE_DB, (pair.voice, pair.text, pair.log_mel_db)


def test_heard_as_the_same_words(pairs: list[rw.Pair], ears) -> None:
    from bidi_tts_hearing.text import word_error_rate

    for pair in pairs:
        heard_onnx = ears.transcribe(rw.pcm16(pair.onnx_audio), rw.SAMPLE_RATE)
        heard_torch = ears.transcribe(rw.pcm16(pair.torch_audio), rw.SAMPLE_RATE)
        assert word_error_rate(pair.text, heard_onnx) <= 0.2, heard_onnx  # the reference itself is speech
        assert word_error_rate(heard_onnx, heard_torch) <= rw.MAX_WER, (heard_onnx, heard_torch)


@pytest.mark.parametrize("control", ["swapped decoder blocks", "LSTM gates in ONNX order"])
def test_the_tolerance_rejects_a_wrong_mapping(routes: rw.Routes, control: str) -> None:
    if control == "swapped decoder blocks":
        state = rw.swapped(routes.state, "decoder.decode.1", "decoder.decode.2")
    else:
        state = rw.onnx_gate_order(routes.state, "predictor.text_encoder.lstms.0")
    pair = routes.pair(rw.SENTENCES[0], rw.VOICES[0], model=routes.kmodel(state))
    assert pair.log_mel_db > rw.LOG_MEL_TOLERANCE_DB or abs(pair.duration_ratio - 1) > rw.DURATION_TOLERANCE


def test_the_distance_is_zero_for_the_same_audio_and_large_for_noise(pairs: list[rw.Pair]) -> None:
    from tests.container.spectral import log_mel_distance_db

    audio = pairs[0].onnx_audio
    assert log_mel_distance_db(audio, audio) == 0.0
    noise = np.random.default_rng(0).normal(scale=0.05, size=audio.size).astype(np.float32)
    assert log_mel_distance_db(audio, noise) > 2 * rw.LOG_MEL_TOLERANCE_DB
