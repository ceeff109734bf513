"""The core of bidi_tts is sans-I/O: no sockets, files, event loops or clocks.

The core is the modules named in ``CORE`` (as bidi_tts/__init__.py lists them); everything else in
the package is an edge that may move bytes, touch files or read clocks (the transports, the gateway,
``wav_file``, the shared command parts). Time and bytes come in from the caller.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bidi_tts

PACKAGE = Path(bidi_tts.__file__).parent
CORE = ("__init__", "_abbreviations", "audio", "chunker", "frames", "metrics", "protocol", "session", "sse")
#: Modules whose import means I/O, concurrency or a clock.
FORBIDDEN_MODULES = frozenset({
    "asyncio", "datetime", "gevent", "http", "io", "os", "pathlib", "select", "selectors", "shutil", "socket",
    "ssl", "subprocess", "sys", "tempfile", "threading", "time", "urllib", "wave", "websockets",
    "bidi_tts.gateway", "bidi_tts.transports", "bidi_tts.wav_file",
})
#: Calls that read a clock or open a file, whatever module they come from.
FORBIDDEN_CALLS = frozenset({"open", "perf_counter", "monotonic", "time_ns", "now", "utcnow", "print", "input"})


def io_uses(source: str) -> list[str]:
    """What in `source` breaks the sans-I/O rule, one line each (empty when nothing does)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in names:
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN_MODULES):
                found.append(f"line {node.lineno}: imports {name}")
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called in FORBIDDEN_CALLS:
                found.append(f"line {node.lineno}: calls {called}()")
    return found


def core_modules() -> list[Path]:
    return [PACKAGE / f"{name}.py" for name in CORE]


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: p.name)
def test_core_module_does_no_io_and_reads_no_clock(path: Path) -> None:
    assert io_uses(path.read_text(encoding="utf-8")) == []


def test_the_core_is_what_the_package_says_it_is() -> None:
    assert all(path.is_file() for path in core_modules())  # a core module renamed leaves no hole
    said = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert all(name in said for name in CORE if not name.startswith("_"))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import time\nx = time.perf_counter()\n", ["line 1: imports time", "line 2: calls perf_counter()"]),
        ("from time import monotonic\n", ["line 1: imports time", "line 1: imports time.monotonic"]),
        ("import asyncio.queues\n", ["line 1: imports asyncio.queues"]),
        ("from bidi_tts.transports.base import Frame\n",
         ["line 1: imports bidi_tts.transports.base", "line 1: imports bidi_tts.transports.base.Frame"]),
        ("from bidi_tts import transports\n", ["line 1: imports bidi_tts.transports"]),
        ("def f(p):\n    return open(p).read()\n", ["line 2: calls open()"]),
        ("import datetime\nd = datetime.datetime.now()\n", ["line 1: imports datetime", "line 2: calls now()"]),
    ],
)
def test_the_check_finds_io_and_clocks(source: str, expected: list[str]) -> None:
    assert io_uses(source) == expected


def test_the_check_passes_pure_code() -> None:
    assert io_uses("import json\nfrom bidi_tts.frames import Frame\nx = json.dumps({'at': 1.0})\n") == []
