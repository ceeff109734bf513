"""`bidi-tts-conformance`'s own help, and --version / --compare anywhere in the argument list."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bidi_tts.install_hint import install_command
from bidi_tts_conformance.cli import HELP, main

ROOT = Path(__file__).resolve().parents[2]


def test_help_starts_with_the_command_s_own_usage_and_lists_targets_options_and_exit_codes(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--container-url", "http://127.0.0.1:9", "--help"]) == 0  # --help anywhere
    out = capsys.readouterr().out
    assert out == HELP
    lines = out.splitlines()
    assert lines[0].startswith("usage: bidi-tts-conformance ") and len(lines) < 80
    for needed in ("--container-url", "--endpoint-name", "--list-cases", "--case", "--clause", "--compare",
                   "--version", "--help-pytest", "exit codes", "docs/exit-codes.md"):
        assert needed in out, needed
    codes = re.findall(r"^  (\d+)\s", out.split("exit codes")[1], re.MULTILINE)
    assert codes[:4] == ["0", "1", "4", "69"]


@pytest.mark.timeout(60)
def test_every_option_the_help_names_is_one_the_suite_takes() -> None:
    """The help is written by hand: it must not name an option pytest's full list does not have."""
    full = subprocess.run([sys.executable, "-m", "bidi_tts_conformance", "--help-pytest"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert full.returncode == 0 and "--container-url" in full.stdout
    own = {"--compare", "--output", "--version", "--help", "--help-pytest", "--list-cases",
           "--junitxml"}  # pytest lists its alias --junit-xml
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", HELP)) - own
    missing = sorted(o for o in named if o not in full.stdout)
    assert not missing, missing


def test_version_works_anywhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--container-url", "http://127.0.0.1:9", "-q", "--version"]) == 0
    assert re.fullmatch(r"bidi-tts-conformance \S+\n", capsys.readouterr().out)


def _report(path: Path, verdict: str) -> Path:
    path.write_text(json.dumps({"target": {"label": path.stem}, "cases": [
        {"id": "frames.binary.1", "clauses": ["TTS-AUDIO"], "outcome": "passed" if verdict == "OK" else "failed",
         "verdict": verdict, "detail": ""}]}), encoding="utf-8")
    return path


def test_compare_works_anywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _report(tmp_path / "a.json", "OK"), _report(tmp_path / "b.json", "FAILED")
    out = tmp_path / "cmp.html"
    assert main(["--output", str(out), str(a), "--compare", str(b)]) == 0
    assert out.is_file() and "frames.binary.1" in out.read_text(encoding="utf-8")
    # and it is still the compare command's usage error (4), not pytest's, when the files are missing
    assert main(["--output", str(out), "--compare"]) == 4
    assert "give the JSON reports to compare" in capsys.readouterr().err


def test_the_install_hint_names_the_source_the_package_came_from() -> None:
    wheel = {"url": "file:///tmp/dist/bidi_tts-0.1.0-py3-none-any.whl", "archive_info": {}}
    assert install_command("hearing", direct_url=wheel, detect=False) == \
        "pip install '/tmp/dist/bidi_tts-0.1.0-py3-none-any.whl[hearing]'"
    git = {"url": "https://github.com/o/bidi-tts", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}
    assert install_command("hearing", direct_url=git, detect=False) == \
        "pip install 'bidi-tts[hearing] @ git+https://github.com/o/bidi-tts@abc123'"
    assert install_command("hearing", checkout=ROOT, direct_url={"url": f"file://{ROOT}",
                                                                 "dir_info": {"editable": True}},
                           detect=False) == "uv sync --extra hearing"
    unknown = install_command("hearing", detect=False)
    assert "uv build" in unknown and "pip install 'bidi-tts[hearing]'" not in unknown
    assert install_command("hearing") == "uv sync --extra hearing"  # this checkout
