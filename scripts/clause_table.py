"""docs/clauses.md: from a contract clause to its cases, the toy that fails each, and the container code.

    uv run python scripts/clause_table.py          # rewrite docs/clauses.md
    uv run python scripts/clause_table.py --check  # exit 1 (one line) when docs/clauses.md is stale

The clauses are bidi_tts_conformance.clauses.CLAUSES, the cases the registry, the toy that fails each
case the proof table of tests/conformance_suite/test_broken_toys.py (PROOFS, PROVEN_ELSEWHERE); the
container code is IMPLEMENTED_BY below, whose every file and name tests/packaging/test_clause_table.py
checks exist. Run from the repository root.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "clauses.md"

# Clause -> where the reference container implements it: "path" or "path:Name", Name a top-level
# function or class of a .py file, or a text that stands in any other file.
IMPLEMENTED_BY: dict[str, tuple[str, ...]] = {
    "SM-LABEL": ("reference_container/Dockerfile:LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming",),
    "SM-PORT": ("docker/serve:--port", "reference_container/settings.py:Settings"),
    "SM-PING": ("reference_container/http_routes.py:ping",),
    "SM-WS-PATH": ("reference_container/app.py:create_app",),
    "SM-ACCEPT": ("reference_container/app.py:bidi_stream", "reference_container/ws_session.py:WsSession"),
    "SM-FRAMES-IN": ("reference_container/ws_session.py:WsSession",),
    "SM-FRAMES-OUT": ("reference_container/ws_session.py:WsSession",),
    "SM-PINGPONG": ("reference_container/settings.py:--ws-ping-interval", "reference_container/__main__.py:main"),
    "SM-CLOSE": ("reference_container/ws_session.py:WsSession",),
    "SM-STOP": ("reference_container/shutdown.py:DrainingServer",),
    "POST-INVOCATIONS": ("reference_container/http_routes.py:invocations",),
    "TTS-AUDIO": ("reference_container/streaming.py:frame_bytes", "reference_container/streaming.py:message_audio"),
    "TTS-BINARY-IN": ("reference_container/ws_session.py:WsSession", "bidi_tts/protocol.py:decode_json_object"),
    "TTS-ORDER": ("reference_container/ws_session.py:WsSession",),
    "TTS-STREAM": ("reference_container/streaming.py:message_audio", "reference_container/segments.py:plan_units",
                   "reference_container/scheduler.py:Scheduler"),
    "TTS-SESSION": ("reference_container/ws_session.py:WsSession",),
    "TTS-CLOSE": ("reference_container/ws_session.py:WsSession",),
    "TTS-ERROR": ("bidi_tts/protocol.py:parse_client_message", "bidi_tts/protocol.py:ErrorCode",
                  "reference_container/ws_session.py:WsSession"),
    "TTS-VOICE": ("bidi_tts/protocol.py:parse_client_message", "bidi_tts/protocol.py:is_voice_name"),
    "TTS-ISOLATION": ("reference_container/scheduler.py:Scheduler", "reference_container/policies.py"),
    "TTS-CLASSIFY": ("bidi_tts/frames.py:decode_control_frame",),
}


def place_problem(place: str, root: Path = ROOT) -> str | None:
    """Why ``place`` ("path" or "path:Name") does not stand in the tree; None when it does."""
    path_text, _, name = place.partition(":")
    path = root / path_text
    if not path.is_file():
        return f"{place}: no file {path_text}"
    if not name:
        return None
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py" and name.isidentifier():
        tree = ast.parse(text)
        top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        return None if name in top else f"{place}: {path_text} defines no top-level {name}"
    return None if name in text else f"{place}: {path_text} does not say {name!r}"


def _where(obj: object) -> str:
    """``path:Name`` of a toy class (or of the class a factory lambda makes)."""
    if not isinstance(obj, type):
        made = obj() if callable(obj) else obj  # a factory such as lambda: Toy(option=True)
        obj = type(made)
    source = Path(inspect.getsourcefile(obj) or "?").resolve()
    return f"{source.relative_to(ROOT).as_posix()}:{obj.__qualname__}"


def toy_of_case(proofs: Mapping[str, Any], toys: Mapping[str, Any],
                elsewhere: Mapping[str, Path]) -> Callable[[str], str]:
    """case id -> the toy that fails it, as ``toy name (path:Class)``, or the module that proves it."""

    def toy(case_id: str) -> str:
        if case_id in proofs:
            name = proofs[case_id].toy
            return f"`{name}` ({_where(toys[name].make)})"
        if case_id in elsewhere:
            return f"its own toys in {elsewhere[case_id].resolve().relative_to(ROOT).as_posix()}"
        return "**none**"

    return toy


def render() -> str:
    """The whole of docs/clauses.md."""
    sys.path.insert(0, str(ROOT))
    from bidi_tts_conformance.cases import REGISTRY
    from bidi_tts_conformance.clauses import CLAUSES
    from tests.conformance_suite import test_broken_toys as proofs

    toy = toy_of_case(proofs.PROOFS, proofs.TOYS, proofs.PROVEN_ELSEWHERE)
    lines = [
        "# From a clause to its cases, their failing toys and the container code",
        "",
        "Generated by `uv run python scripts/clause_table.py` from the clause list "
        "(`bidi_tts_conformance/clauses.py`), the case registry, the proof table of "
        "`tests/conformance_suite/test_broken_toys.py` (the toy container each case must fail on) and the "
        "script's own map of the reference container's code. Do not edit by hand: "
        "`tests/packaging/test_clause_table.py` fails when this page is stale or names code that is gone.",
        "",
        "| clause | case | fails on the toy | implemented in |",
        "|---|---|---|---|",
    ]
    for clause in CLAUSES:
        cases = [c.id for c in REGISTRY if clause in c.clauses]
        code = ", ".join(f"`{place}`" for place in IMPLEMENTED_BY.get(clause, ())) or "**none**"
        if not cases:
            lines.append(f"| {clause} | (no case cites it) |  | {code} |")
        for i, case_id in enumerate(cases):
            lines.append(f"| {clause if i == 0 else ''} | `{case_id}` | {toy(case_id)} | {code if i == 0 else ''} |")
    return "\n".join(lines) + "\n"


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--check"]):
        print("usage: python scripts/clause_table.py [--check]", file=sys.stderr)
        return 4
    problems = [p for places in IMPLEMENTED_BY.values() for place in places if (p := place_problem(place))]
    if problems:
        print(f"clause_table: the container map names code that is gone: {'; '.join(problems)}", file=sys.stderr)
        return 1
    text = render()
    if args == ["--check"]:
        if not DOC.is_file() or DOC.read_text(encoding="utf-8") != text:
            print(f"clause_table: {_shown(DOC)} is stale: run `uv run python scripts/clause_table.py`",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"clause_table: wrote {_shown(DOC)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
