"""Wrong input to the ladder: one line on stderr and exit 4 (usage) or 69 (nothing there), within seconds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bidi_tts.local_container import free_port
from bidi_tts_loadtest.ladder.cli import main

URL = ["--container-url", "http://127.0.0.1:1"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--container-url", "127.0.0.1:8080", "--levels", "1"], "write it with its scheme"),
    (["--levels", "1"], "give one target: --container-url URL, --endpoint-name NAME or --timed-profile NAME|PATH"),
    ([*URL, "--endpoint-name", "e", "--levels", "1"], "(not --container-url and --endpoint-name)"),
    ([*URL, "--timed-profile", "h200-eager", "--levels", "1"], "(not --container-url and --timed-profile)"),
    ([*URL, "--levels"], "--levels: expected at least one argument"),
    ([*URL], "the following arguments are required: --levels"),
    ([*URL, "--levels", "0"], "--levels: 0 must be a positive number"),
    ([*URL, "--levels", "1.5"], "--levels of a closed loop are numbers of clients: whole numbers"),
    ([*URL, "--levels", "1", "1"], "a level is given twice"),
    ([*URL, "--levels", "1", "--hold-s", "10", "--measure-s", "20"], "--measure-s 20 is longer than --hold-s 10"),
    (["--timed-profile", "nope", "--levels", "1"], "unknown timed profile 'nope'"),
    (["--timed-profile", "h200-eager", "--config", "lifo", "--levels", "1"], "scheduler must be one of"),
    ([*URL, "--config", "fifo", "--levels", "1"], "--config goes with --timed-profile"),
    ([*URL, "--levels", "1", "--texts", "/nonexistent/texts.txt"], "cannot read it"),
    (["--endpoint-name", "e", "--region", "moon", "--levels", "1"], "is not an AWS region name"),
])
def test_bad_options_are_one_line_and_exit_4(argv: list[str], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 4  # docs/exit-codes.md: a usage error
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_an_empty_texts_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    texts = tmp_path / "t.txt"
    texts.write_text("# only a comment\n\n")
    with pytest.raises(SystemExit) as exit_info:
        main([*URL, "--levels", "1", "--texts", str(texts)])
    assert exit_info.value.code == 4 and "no texts in it" in capsys.readouterr().err


def test_nothing_listening_is_one_line_and_exit_69_in_seconds() -> None:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "bidi_tts_loadtest.ladder", "--container-url",
                             f"http://127.0.0.1:{free_port()}", "--levels", "1"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 69 and time.monotonic() - started < 20
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and "nothing listens at 127.0.0.1" in err[0] and "Traceback" not in result.stderr
