"""bidi_tts.model_parts: join part files in order, check size and sha256, never leave a wrong file."""

from __future__ import annotations

import ast
import hashlib
import sys
from pathlib import Path

import pytest

from bidi_tts import model_parts
from bidi_tts.model_parts import Mismatch, PartedFile, PartMissing, assemble, is_intact, part_sources

MODULE = Path(model_parts.__file__)


def _parts(tmp_path: Path, *blobs: bytes) -> list[Path]:
    paths = []
    for i, blob in enumerate(blobs, start=1):
        path = tmp_path / f"part{i}.bin"
        path.write_bytes(blob)
        paths.append(path)
    return paths


def test_parts_are_joined_in_order_and_checked(tmp_path: Path) -> None:
    blobs = (b"a" * 3_000_000, b"b" * 5, b"c")  # the first spans several read blocks
    whole = b"".join(blobs)
    target = tmp_path / "out" / "model.bin"
    got = assemble(_parts(tmp_path, *blobs), target, size=len(whole), sha256=hashlib.sha256(whole).hexdigest())
    assert got == target and target.read_bytes() == whole
    assert [p.name for p in target.parent.iterdir()] == ["model.bin"]  # no temporary file left
    assert is_intact(target, len(whole), hashlib.sha256(whole).hexdigest())


@pytest.mark.parametrize("wrong", ["order", "size", "sha256"])
def test_a_join_that_is_not_the_pinned_file_is_refused_and_leaves_nothing(tmp_path: Path, wrong: str) -> None:
    blobs = (b"first", b"second")
    whole = b"".join(blobs)
    size, digest = len(whole), hashlib.sha256(whole).hexdigest()
    parts = _parts(tmp_path, *blobs)
    if wrong == "order":
        parts.reverse()
    elif wrong == "size":
        size += 1
    else:
        digest = "0" * 64
    folder = tmp_path / "out"
    with pytest.raises(Mismatch, match=f"expected {size} bytes with {digest}") as caught:
        assemble(parts, folder / "model.bin", size=size, sha256=digest)
    assert caught.value.size == len(whole)
    assert list(folder.iterdir()) == []


def test_a_file_that_differs_is_not_intact(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(b"model")
    digest = hashlib.sha256(b"model").hexdigest()
    assert is_intact(path, 5, digest)
    assert not is_intact(path, 6, digest)
    assert not is_intact(path, 5, hashlib.sha256(b"other").hexdigest())
    assert not is_intact(tmp_path / "absent.bin", 5, digest)


def test_a_missing_part_package_is_named() -> None:
    spec = PartedFile("x.bin", 1, "0" * 64, (("json", "__init__.py"), ("no_such_part_package_9", "part.bin")))
    with pytest.raises(PartMissing, match="no_such_part_package_9") as caught:
        part_sources(spec)
    assert caught.value.package == "no_such_part_package_9"


def test_the_cache_folder_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert model_parts.default_cache_dir() == tmp_path / "bidi-tts"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert model_parts.default_cache_dir() == Path.home() / ".cache" / "bidi-tts"


def test_it_imports_only_the_standard_library() -> None:
    """The image build copies this one file into a stage without the project (docker/fetch_weights.py)."""
    imported = set()
    for node in ast.walk(ast.parse(MODULE.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - {"__future__"} <= sys.stdlib_module_names, imported - sys.stdlib_module_names
