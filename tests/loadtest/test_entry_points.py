"""Every pinned load-tool command answers `--help` from a clean copy of the checkout.

The commands of CONTRACT.md and the docs (`python -m bidi_tts_loadtest.plan`, `python -m loadtest.capacity`,
`locust -f loadtest/locustfile.py`, the `bidi-tts-load` script, ...) are thin entry points over the
subpackages; a module moved without its entry point, or an entry point that imports what is no longer
there, fails here. The copy holds only the files git would hand a fresh clone (tracked, or new and not
ignored), and it comes first on the import path, so nothing left over in this checkout (a stale
module, a `__pycache__`) can make a command pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

#: (what the docs write, the argv that runs it, a word its --help must show).
PINNED: list[tuple[str, list[str], str]] = [
    *[(f"python -m bidi_tts_loadtest.{name}", [sys.executable, "-m", f"bidi_tts_loadtest.{name}"], word)
      for name, word in [("plan", "--peak-rps"), ("ladder", "--container-url"), ("fleet_sim", "--plan"),
                         ("capacity", "--configs"), ("bidi_vs_batch", "--tokens-per-second"),
                         ("relay", "--port"), ("browser_ttfa", "--container-url"), ("transport_cost", "--clips"),
                         ("bench_generator", "--sessions"), ("known_latency", "--ttfa-ms"),
                         ("compare", "--json")]],
    *[(f"python -m loadtest.{name}", [sys.executable, "-m", f"loadtest.{name}"], word)
      for name, word in [("capacity", "--configs"), ("bidi_vs_batch", "--json"), ("relay", "--port"),
                         ("browser_ttfa", "--shapes"), ("transport_cost", "--clips"),
                         ("known_latency", "--port"), ("bench_generator", "--sessions"), ("plan", "--peak-rps"),
                         ("ladder", "--container-url"), ("fleet_sim", "--plan")]],
    ("python -m loadtest.capacity calibrate", [sys.executable, "-m", "loadtest.capacity", "calibrate"], "--refit"),
    ("python -m bidi_tts_loadtest", [sys.executable, "-m", "bidi_tts_loadtest"], "--summary-json"),
    ("python -m loadtest", [sys.executable, "-m", "loadtest"], "--summary-json"),
    ("bidi-tts-load", [str(BIN / "bidi-tts-load")], "--slo-ttfa-p95-ms"),
    # Locust prints --help before it imports the locustfile (see bidi_tts_loadtest/__main__.py), so only
    # its own options show; that the locustfile imports is what test_locustfile.py runs.
    ("locust -f loadtest/locustfile.py", [str(BIN / "locust"), "-f", "loadtest/locustfile.py"], "--headless"),
]


@pytest.fixture(scope="module")
def clean_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    if not listed or listed == [""]:
        pytest.skip("not a git checkout")
    root = tmp_path_factory.mktemp("clone")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file() and name.split("/")[0] in {"bidi_tts", "bidi_tts_hearing", "bidi_tts_loadtest",
                                                        "loadtest", "reference_container",
                                                        "reference_container_deploy", "pyproject.toml"}:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / name)
    return root


def _help(argv: list[str], root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([*argv, "--help"], cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_every_pinned_command_answers_help_from_a_clean_copy(clean_copy: Path) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda row: _help(row[1], clean_copy), PINNED))
    broken = [f"{shown}: exit {r.returncode}, {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
              for (shown, _, word), r in zip(PINNED, done, strict=True) if r.returncode != 0 or word not in r.stdout]
    assert not broken, "\n".join(broken)


def test_the_copy_is_what_the_commands_import(clean_copy: Path) -> None:
    """A command whose module is missing from the copy fails (the check does not fall back to this checkout)."""
    (clean_copy / "bidi_tts_loadtest" / "fleet_sim.py").rename(clean_copy / "fleet_sim.py.away")
    try:
        gone = _help([sys.executable, "-m", "bidi_tts_loadtest.fleet_sim"], clean_copy)
    finally:
        (clean_copy / "fleet_sim.py.away").rename(clean_copy / "bidi_tts_loadtest" / "fleet_sim.py")
    assert gone.returncode != 0 and "No module named bidi_tts_loadtest.fleet_sim" in gone.stderr
