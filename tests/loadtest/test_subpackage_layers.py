"""The load tools' subpackages import only what lies below them, and no module imports itself round a circle.

core is the floor; the Locust run, the capacity sweep, the ladders, the fleet simulation, the relay and
the studies each stand on it alone; the fleet simulation reads ladder results with the ladder's reader,
and the planner stands on both (it replays its own plan).
The modules directly in ``bidi_tts_loadtest/`` are the pinned commands' thin entry points.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "bidi_tts_loadtest"
#: subpackage -> the subpackages it may import (its own aside)
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "run": {"core"}, "capacity": {"core"}, "ladder": {"core"}, "relay": {"core"}, "studies": {"core"},
    "fleet": {"core", "ladder"},
    "plan": {"core", "ladder", "fleet"},
}
ENTRY_POINTS = {"__init__", "__main__", "bench_generator", "bidi_vs_batch", "browser_ttfa", "compare", "corpus",
                "fleet_sim", "known_latency", "transport_cost"}


def _imports(path: Path) -> list[str]:
    """The bidi_tts_loadtest modules `path` imports (absolute imports; `from PKG import MODULE` as PKG.MODULE)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("bidi_tts_loadtest.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("bidi_tts_loadtest."):
                found.append(node.module)
            if node.module.startswith("bidi_tts_loadtest"):
                found += [f"{node.module}.{a.name}" for a in node.names
                          if PACKAGE.parent.joinpath(*f"{node.module}.{a.name}".split(".")).with_suffix(".py").exists()]
    return found


def _module(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def test_only_entry_points_sit_outside_a_subpackage() -> None:
    loose = {p.stem for p in PACKAGE.glob("*.py")} - ENTRY_POINTS
    assert not loose, f"modules outside a subpackage: {sorted(loose)}"
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == set(ALLOWED)


@pytest.mark.parametrize("subpackage", sorted(ALLOWED))
def test_a_subpackage_imports_only_what_lies_below_it(subpackage: str) -> None:
    wrong = []
    for path in sorted((PACKAGE / subpackage).rglob("*.py")):
        for name in _imports(path):
            target = name.split(".")[1]
            if target != subpackage and target not in ALLOWED[subpackage]:
                wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not wrong, wrong


def test_no_module_imports_itself_round_a_circle() -> None:
    graph = {_module(p): {n for n in _imports(p)} for p in PACKAGE.rglob("*.py")}
    state: dict[str, int] = {}
    circle: list[str] = []

    def visit(node: str, path: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circle.extend([*path[path.index(nxt):], nxt] if nxt in path else [node, nxt])
                return True
            if nxt not in state and visit(nxt, [*path, nxt]):
                return True
        state[node] = 2
        return False

    for start in sorted(graph):
        if start not in state and visit(start, [start]):
            break
    assert not circle, " -> ".join(circle)
