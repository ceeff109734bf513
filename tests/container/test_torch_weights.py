"""reference_container.torch_weights' pieces, on small arrays (fast; no model, no ONNX file)."""

from __future__ import annotations

import numpy as np
import pytest

from reference_container import torch_weights as tw


def test_scope_from_node_names() -> None:
    assert tw._scope("/encoder/text_encoder/cnn.0/cnn.0.0/Conv_quant") == "encoder.text_encoder.cnn.0.0"
    assert tw._scope("/encoder/bert/encoder/albert_layer_groups.0/albert_layers.0/attention/query_3/MatMul_quant") \
        == "encoder.bert.encoder.albert_layer_groups.0.albert_layers.0.attention.query"
    assert tw._scope("/decoder/decoder/generator/ups.0/ConvTranspose") == "decoder.decoder.generator.ups.0"


def test_module_for_drops_wrappers_and_matches_a_unique_suffix() -> None:
    modules = {"predictor.F0.0.conv1", "decoder.F0_conv", "text_encoder.lstm", "predictor.lstm",
               "predictor.shared", "decoder.generator.ups.0"}
    assert tw._module_for("encoder.F0.0.conv1", modules) == "predictor.F0.0.conv1"
    assert tw._module_for("encoder.text_encoder.lstm", modules) == "text_encoder.lstm"
    assert tw._module_for("encoder.predictor.lstm", modules) == "predictor.lstm"
    assert tw._module_for("encoder.shared", modules) == "predictor.shared"
    assert tw._module_for("decoder.decoder.generator.ups.0", modules) == "decoder.generator.ups.0"
    with pytest.raises(tw.ConversionError, match="matches 2 KModel modules"):
        tw._module_for("encoder.x.lstm", {"a.x.lstm", "b.x.lstm"})
    with pytest.raises(tw.ConversionError, match="matches 0 KModel modules"):
        tw._module_for("encoder.nowhere", modules)


def test_torch_names_from_onnx_names() -> None:
    assert tw._torch_name("encoder.bert.embeddings.LayerNorm.weight") == "bert.embeddings.LayerNorm.weight"
    assert tw._torch_name("decoder.decoder.generator.conv_post.bias") == "decoder.generator.conv_post.bias"


def test_lstm_gates_go_from_onnx_order_to_torch_order() -> None:
    i, o, f, c = (np.full((2, 3), k, dtype=np.float32) for k in (1, 2, 3, 4))
    torch_order = tw._lstm_blocks(np.concatenate([i, o, f, c]))
    assert [float(b[0, 0]) for b in np.split(torch_order, 4)] == [1, 3, 4, 2]  # i, f, g(=c), o


def test_weight_norm_reproduces_the_weight_and_survives_zero_channels() -> None:
    import torch

    w = np.random.default_rng(0).normal(size=(4, 3, 5)).astype(np.float32)
    w[2] = 0  # int8 rounding can leave a whole output channel at the zero point
    g, v = tw._weight_norm(w)
    assert g.shape == (4, 1, 1) and float(g[2, 0, 0]) == 0
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # kokoro's (deprecated) weight_norm, as KModel uses it
        conv = torch.nn.utils.weight_norm(torch.nn.Conv1d(3, 4, 5))
    with torch.no_grad():
        conv.weight_g.copy_(torch.from_numpy(g))
        conv.weight_v.copy_(torch.from_numpy(v))
        conv(torch.zeros(1, 3, 5))  # the pre-forward hook recomputes weight = g * v / ||v||
    rebuilt = conv.weight.detach().numpy()
    assert np.isfinite(rebuilt).all()
    np.testing.assert_allclose(rebuilt, w, atol=1e-6)


def test_nest_and_flatten_round_trip_in_the_hub_layout() -> None:
    flat = {"bert.embeddings.word_embeddings.weight": 1, "decoder.generator.conv_post.bias": 2}
    nested = tw.nest(flat)
    assert nested == {"bert": {"embeddings.word_embeddings.weight": 1}, "decoder": {"generator.conv_post.bias": 2}}
    assert tw.flatten(nested) == flat
