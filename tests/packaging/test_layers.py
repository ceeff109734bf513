"""The import picture: each top-level package imports only the project packages below it.

`bidi_tts` is the floor; `bidi_tts_hearing` (the recognizer) sits on it alone, so that the suite and
the load test can both use it without one reaching into the other. `reference_container_deploy` (the AWS
tool) imports nothing of the container's runtime, which is why it can live beside it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: package -> the project packages it may import (its own aside).
ALLOWED: dict[str, set[str]] = {
    "bidi_tts": set(),
    "bidi_tts_hearing": {"bidi_tts"},
    # reference_container/deploy/__main__.py forwards the pinned command to the tool beside the runtime
    "reference_container": {"bidi_tts", "reference_container_deploy"},
    "reference_container_deploy": {"bidi_tts"},
    "bidi_tts_conformance": {"bidi_tts", "bidi_tts_hearing"},
    # capacity.py reads a timed profile with the container's own loader
    "bidi_tts_loadtest": {"bidi_tts", "bidi_tts_hearing", "reference_container"},
}
PROJECT = {*ALLOWED, "conformance", "loadtest", "tests"}


def project_imports(package: str) -> dict[str, list[str]]:
    """Each project package that `package` imports, with where (file:line)."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in PROJECT and top != package:
                    found.setdefault(top, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_what_lies_below_it(package: str) -> None:
    wrong = {name: where for name, where in project_imports(package).items() if name not in ALLOWED[package]}
    assert not wrong, f"{package} imports {wrong}"


def test_the_check_sees_an_import_that_runs_back_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bidi_tts_hearing").mkdir()
    (tmp_path / "bidi_tts_hearing" / "x.py").write_text("from bidi_tts_conformance.cases import REGISTRY\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert project_imports("bidi_tts_hearing") == {"bidi_tts_conformance": ["bidi_tts_hearing/x.py:1"]}
