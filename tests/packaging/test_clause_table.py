"""docs/clauses.md (scripts/clause_table.py): from a clause to its cases, failing toys and container code."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from bidi_tts_conformance.clauses import CLAUSES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def table() -> ModuleType:
    spec = importlib.util.spec_from_file_location("clause_table", ROOT / "scripts" / "clause_table.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["clause_table"] = module
    spec.loader.exec_module(module)
    return module


def test_the_page_is_the_generated_one(table: ModuleType) -> None:
    assert (ROOT / "docs" / "clauses.md").read_text(encoding="utf-8") == table.render(), (
        "docs/clauses.md is stale: run `uv run python scripts/clause_table.py`")


def test_every_clause_has_container_code_that_stands(table: ModuleType) -> None:
    assert set(table.IMPLEMENTED_BY) == set(CLAUSES)
    problems = [p for places in table.IMPLEMENTED_BY.values() for place in places if (p := table.place_problem(place))]
    assert problems == []


def test_every_case_row_names_a_toy(table: ModuleType) -> None:
    rows = [line for line in table.render().splitlines() if line.startswith("| ") and "`" in line]
    assert rows and not [row for row in rows if "**none**" in row]


def test_a_place_that_is_gone_is_named(table: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def here():\n    pass\n\nclass Also:\n    def inner(self): ...\n")
    (tmp_path / "serve").write_text("exec app --port 8080\n")
    assert table.place_problem("pkg/mod.py:here", tmp_path) is None
    assert table.place_problem("serve:--port", tmp_path) is None
    assert "no file pkg/gone.py" in table.place_problem("pkg/gone.py:here", tmp_path)
    assert "defines no top-level inner" in table.place_problem("pkg/mod.py:inner", tmp_path)
    assert "does not say '--host'" in table.place_problem("serve:--host", tmp_path)


def test_check_fails_on_a_stale_page(table: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "clauses.md"
    stale.write_text(table.render().replace("TTS-ORDER", "TTS-0RDER", 1))
    monkeypatch.setattr(table, "DOC", stale)
    assert table.main(["--check"]) == 1
    assert "is stale" in capsys.readouterr().err
    assert table.main(["--bogus"]) == 4
