"""Every pinned option is on the command line, with help, and bad usage exits 2."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reference_container_deploy.cli import main

ROOT = Path(__file__).resolve().parents[2]

PINNED = {
    "up": [
        "--name",
        "--image",
        "--role-arn",
        "--instance-type",
        "--instance-count",
        "--region",
        "--build",
        "--skip-label-check",
        "--no-wait",
        "--dry-run",
        "--autoscale-min",
        "--autoscale-max",
        "--autoscale-target",
        "--plan",
    ],
    "down": ["--name", "--purge", "--region"],
    "scale-out-time": ["--name", "--region", "--scale-out-s", "--sessions", "--p95-ms", "--timeout"],  # not pinned
}


@pytest.mark.parametrize("command", ["up", "down", "scale-out-time"])
def test_help_lists_pinned_options_and_exit_codes(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in PINNED[command]:
        assert option in text
    assert "exit codes:" in text and "AWS_ENDPOINT_URL" in text


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["up", "--name", "x"])
    assert done.value.code == 2
    assert (
        main(
            [
                "up",
                "--name",
                "bad_name",
                "--image",
                "r:1",
                "--role-arn",
                "x",
                "--dry-run",
                "--region",
                "us-east-1",
            ]
        )
        == 2
    )
    assert "naming rule" in capsys.readouterr().err
    assert (
        main(
            [
                "up",
                "--name",
                "ok",
                "--role-arn",
                "arn:aws:iam::123456789012:role/r",
                "--region",
                "us-east-1",
                "--dry-run",
            ]
        )
        == 2
    )
    assert "--image is required unless --build" in capsys.readouterr().err


def test_the_pinned_command_says_so_in_one_line_where_the_tool_is_not_installed(tmp_path: Path) -> None:
    """The runtime image carries reference_container/deploy/ (the forwarder) but not the tool."""
    forwarder = tmp_path / "reference_container" / "deploy"
    shutil.copytree(ROOT / "reference_container" / "deploy", forwarder, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "reference_container" / "__init__.py").write_text("")
    # -S: no site-packages, so neither the checkout nor an installed wheel lends it the tool
    done = subprocess.run([sys.executable, "-S", "-m", "reference_container.deploy", "up", "--help"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, no traceback
    assert "not installed here" in done.stderr
