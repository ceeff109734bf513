"""Every pinned option is on the command line, with help, and bad usage exits 2."""

from __future__ import annotations

import pytest

from reference_container_deploy.cli import main

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
    ],
    "down": ["--name", "--purge", "--region"],
}


@pytest.mark.parametrize("command", ["up", "down"])
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
