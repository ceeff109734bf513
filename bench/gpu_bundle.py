"""Build the GPU bundle: one folder that measures Kokoro-82M on torch with its real weights, anywhere.

    python bench/gpu_bundle.py build/gpu-bundle        # ~40 s here; the folder is ~59.4 MB
    bash build/gpu-bundle/run.sh                       # on the GPU machine: rebuild, check, measure
    bash build/gpu-bundle/run.sh --device cpu --quick  # the smoke run the tests make

The GPU machine this project can borrow has no network, no package index and no kokoro, misaki or
spaCy, and a call carries at most 64 MiB with the checkout (~3.5 MB). So everything that needs those
is done here, at bundle time:

- ``model.pack``: the int8 ONNX model, packed to 58.8 MB (:mod:`gpu_bundle_pack`), rebuilt byte for
  byte there and converted by the project's own ``reference_container/torch_weights.py``;
- ``manifest.json``: the sha256 of the rebuilt state dict's tensors (the converter's output here),
  the benchmark corpus as misaki's phonemes (bench/gpu_corpus.py's four sentences and those of
  ``bidi_tts_loadtest/answers.txt``), the probes (sentences at the corpus's length quantiles), and
  the check sentence with its duration on the ONNX route (onnxruntime, here);
- ``voices.npz``: a few voice packs, only the rows the corpus can index (style = ``pack[len - 1]``);
- ``kokoro/``: KModel and its modules from the installed kokoro 0.9.4 (Apache-2.0, its LICENSE
  beside them), with the pipeline, loguru, huggingface_hub and transformers imports taken out
  (``_albert.py``, :mod:`gpu_bundle_albert`, stands in for transformers' ALBERT);
- ``torch_weights.py``, ``torch_batch.py`` (the container's former ``Batcher``), ``gpu_bundle_pack.py``,
  ``gpu_bundle_run.py`` and ``gpu_bundle_serving.py`` (the measurement) and ``run.sh``;
- ``reference_container/synthesizers/``: the container's batched route (``kokoro_batched``,
  ``kokoro_masked``) and its serving loop (``model_loop``), the files the container runs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import gpu_bundle_pack  # noqa: E402
from bidi_tts.exit_codes import Parser  # noqa: E402

CALL_LIMIT = 64 * 2**20  # what one call to the GPU machine carries, checkout included
VOICES = ("af_heart", "am_adam", "bf_emma", "bm_george")
KOKORO_FILES = ("model.py", "modules.py", "istftnet.py", "custom_stft.py")
CONTAINER_FILES = tuple(f"reference_container/{name}" for name in (
    "__init__.py", "synthesizers/__init__.py", "synthesizers/kokoro_batched.py", "synthesizers/kokoro_masked.py",
    "synthesizers/model_loop.py"))
PROBE_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
CHECK_TEXT = "The quick brown fox jumps over the lazy dog near the bank."
# (pattern, replacement) per vendored file: what must not be imported on the GPU machine.
_VENDOR_EDITS: dict[str, tuple[tuple[str, str], ...]] = {
    "model.py": ((r"^from huggingface_hub import hf_hub_download$",
                  "def hf_hub_download(**_: object) -> str:  # bundle: no hub here\n"
                  "    raise RuntimeError('the GPU bundle has no hub: pass config and model')"),
                 (r"^from loguru import logger$", "import logging\nlogger = logging.getLogger('kokoro')"),
                 (r"^from transformers import AlbertConfig$", "from ._albert import AlbertConfig")),
    "modules.py": ((r"^from transformers import AlbertModel$", "from ._albert import AlbertModel"),),
    "custom_stft.py": ((r"^from attr import attr$", ""),),
}
RUN_SH = """#!/usr/bin/env bash
# Kokoro-82M on torch, real weights: rebuild, check, measure. Needs python3 with torch, numpy, onnx.
#   bash run.sh                       # CUDA, at most ~8 minutes; results in $OUT or ./results
#   bash run.sh --device cpu --quick  # smoke run
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
command -v "$py" >/dev/null 2>&1 || { echo "run.sh: $py not found (set PYTHON)" >&2; exit 4; }
export PYTHONPATH="$here" HF_HUB_OFFLINE=1
exec "$py" "$here/gpu_bundle_run.py" "$@"
"""


class BundleError(RuntimeError):
    """The bundle cannot be built here; the message is one line."""


def _kokoro_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("kokoro")
    if spec is None or spec.origin is None:
        raise BundleError("the kokoro package is not installed here")
    return Path(spec.origin).parent


def vendor_kokoro(target: Path) -> None:
    """KModel's files, with the imports the GPU machine lacks replaced; kokoro's license beside them."""
    source = _kokoro_dir()
    target.mkdir(parents=True)
    for name in KOKORO_FILES:
        text = (source / name).read_text(encoding="utf-8")
        for pattern, replacement in _VENDOR_EDITS.get(name, ()):
            text, count = re.subn(pattern, replacement, text, count=1, flags=re.M)
            if count != 1:
                raise BundleError(f"kokoro/{name}: expected line {pattern!r} not found (kokoro changed?)")
        (target / name).write_text(text, encoding="utf-8")
    (target / "_albert.py").write_text((ROOT / "bench" / "gpu_bundle_albert.py").read_text(encoding="utf-8"))
    (target / "__init__.py").write_text("from .model import KModel\n\n__all__ = ['KModel']\n", encoding="utf-8")
    licenses = sorted(source.parent.glob("kokoro-*.dist-info/licenses/LICENSE"))
    if not licenses:
        raise BundleError("kokoro's LICENSE (Apache-2.0) not found beside the package")
    shutil.copy(licenses[-1], target / "LICENSE")
    (target / "NOTICE").write_text(
        "Files model.py, modules.py, istftnet.py and custom_stft.py are from kokoro 0.9.4 (hexgrad, Apache-2.0).\n"
        "Modified by bidi-tts's bench/gpu_bundle.py: the huggingface_hub, loguru, transformers and attr imports\n"
        "are replaced (a stub, logging, and _albert.py, a re-implementation of transformers' ALBERT).\n",
        encoding="utf-8")


def corpus_texts() -> list[str]:
    from bench.gpu_corpus import SENTENCES
    from bidi_tts.chunker import IncrementalSentenceChunker
    from bidi_tts_loadtest.corpus import load_answers

    texts = list(SENTENCES)
    for answer in load_answers():
        chunker = IncrementalSentenceChunker()
        texts += chunker.feed(answer)
        if (rest := chunker.flush()) is not None:
            texts.append(rest)
    return [t.strip() for t in dict.fromkeys(texts) if t.strip()]


def phonemize(texts: list[str], vocab: dict[str, int]) -> list[dict[str, Any]]:
    from reference_container.g2p import EnglishG2P

    g2p = EnglishG2P()
    units = []
    for text in texts:
        for phonemes in g2p.phonemes(text):
            ids = [0, *(vocab[p] for p in phonemes if p in vocab), 0]
            units.append({"text": text, "phonemes": phonemes, "tokens": len(ids)})
    return units


def probes(units: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ordered = sorted(units, key=lambda u: u["tokens"])
    picked = {round(q * (len(ordered) - 1)) for q in PROBE_QUANTILES}
    return [ordered[i] for i in sorted(picked)]


def onnx_duration(onnx_path: Path, vocab: dict[str, int], phonemes: str, style: Any) -> float:
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    ids = [0, *(vocab[p] for p in phonemes if p in vocab), 0]
    (audio,) = session.run(["audio"], {"tokens": np.array([ids], dtype=np.int64), "style": style,
                                       "speed": np.array([1.0], dtype=np.float32)})
    return float(np.asarray(audio).size / 24_000)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _empty_folder(out: Path) -> None:
    """Make `out` (or take it empty) before minutes of work; BundleError (one line) when it cannot be."""
    if out.exists() and not out.is_dir():
        raise BundleError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        raise BundleError(f"{out} exists and is not empty")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / ".write-test").touch()
        (out / ".write-test").unlink()
    except OSError as exc:
        raise BundleError(f"cannot write {out}: {exc.strerror}") from None


def build(out: Path, kokoro_dir: Path | None = None, log: Any = print) -> dict[str, Any]:
    """Write the bundle into `out`; `kokoro_dir` holds config.json and voices/ (default: where the container looks)."""
    _empty_folder(out)  # before the imports and the minutes of work
    import numpy as np
    import torch

    from reference_container import assets, torch_weights

    config = assets.find_config(kokoro_dir)
    if config is None:
        raise BundleError("no Kokoro config.json on this machine (../shared/kokoro or /opt/kokoro; or --kokoro-dir)")
    voices_dir = kokoro_dir / "voices" if kokoro_dir is not None and (kokoro_dir / "voices").is_dir() else None
    bank = assets.find_voices(voices_dir, allow_hub=False, default_voice="af_heart")
    missing = [v for v in VOICES if v not in bank.packs]
    if missing:
        raise BundleError(f"voice packs missing here: {', '.join(missing)}")
    started = time.perf_counter()
    vocab = json.loads(config.read_text(encoding="utf-8"))["vocab"]
    onnx_path = assets.onnx_model_path(None, None)
    onnx_meta = gpu_bundle_pack.pack(onnx_path, out / "model.pack")
    log(f"gpu_bundle: model packed to {onnx_meta['packed_bytes'] / 1e6:.1f} MB ({time.perf_counter() - started:.0f} s)")
    weights = assets.converted_torch_weights(config, None, None)  # the converter's output, cached
    state = torch_weights.flatten(torch.load(weights, map_location="cpu", weights_only=True))
    state_sha = gpu_bundle_pack.state_sha256(state)
    units = phonemize(corpus_texts(), vocab)
    check_ps = next(iter(phonemize([CHECK_TEXT], vocab)))["phonemes"]
    log(f"gpu_bundle: {len(units)} corpus units phonemized ({time.perf_counter() - started:.0f} s)")
    rows = max(max(len(u["phonemes"]) for u in units), len(check_ps))
    packs: dict[str, Any] = {v: bank.packs[v][:rows] for v in VOICES}
    np.savez_compressed(out / "voices.npz", **packs)
    check_style = bank.packs["af_heart"][len(check_ps) - 1]
    check = {"text": CHECK_TEXT, "phonemes": check_ps, "voice": "af_heart",
             "onnx_duration_s": onnx_duration(onnx_path, vocab, check_ps, check_style)}
    shutil.copy(config, out / "config.json")
    vendor_kokoro(out / "kokoro")
    for source, name in ((ROOT / "reference_container" / "torch_weights.py", "torch_weights.py"),
                         (ROOT / "reference_container" / "synthesizers" / "torch_batch.py", "torch_batch.py"),
                         (ROOT / "bench" / "gpu_bundle_pack.py", "gpu_bundle_pack.py"),
                         (ROOT / "bench" / "gpu_bundle_run.py", "gpu_bundle_run.py"),
                         (ROOT / "bench" / "gpu_bundle_serving.py", "gpu_bundle_serving.py")):
        shutil.copy(source, out / name)
    for name in CONTAINER_FILES:  # the container's batched route, as the package it imports itself as
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, out / name)
    (out / "run.sh").write_text(RUN_SH, encoding="utf-8")
    (out / "run.sh").chmod(0o755)
    manifest: dict[str, Any] = {"built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": _commit(),
                "onnx": onnx_meta, "weights": {"state_sha256": state_sha, "tensors": len(state)},
                "check": check, "corpus": units, "probes": probes(units), "voices": list(VOICES), "bytes": 0}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
    manifest["bytes"] = bundle_bytes(out)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
    log(f"gpu_bundle: {out} is {manifest['bytes'] / 1e6:.1f} MB ({time.perf_counter() - started:.0f} s)")
    return manifest


def bundle_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def tracked_bytes() -> int:
    """The checkout's tracked files: what travels with the bundle in one call."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=30).stdout
    return sum((ROOT / n).stat().st_size for n in names.decode().split("\0") if n and (ROOT / n).is_file())


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", type=Path, help="an empty or new folder (build/gpu-bundle is git-ignored)")
    p.add_argument("--kokoro-dir", type=Path, help="folder with Kokoro's config.json and voices/")
    args = p.parse_args(argv)
    try:
        manifest = build(args.out_dir, args.kokoro_dir)
    except (BundleError, gpu_bundle_pack.PackError) as exc:
        print(f"gpu_bundle: {exc}", file=sys.stderr)
        return 70 if isinstance(exc, gpu_bundle_pack.PackError) else 4
    total = manifest["bytes"] + tracked_bytes()
    print(f"gpu_bundle: with the checkout {total / 2**20:.1f} MiB of the {CALL_LIMIT / 2**20:.0f} MiB a call carries")
    if total > CALL_LIMIT:
        print("gpu_bundle: too large for one call", file=sys.stderr)
        return 70
    return 0


if __name__ == "__main__":
    sys.exit(main())
