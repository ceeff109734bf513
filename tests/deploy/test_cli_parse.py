"""The command line parses to the same namespaces: defaults, repeatable options, types (issue 24's
split of build_parser into one function per subcommand must not change a value)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference_container_deploy import image as image_ops
from reference_container_deploy.cli import build_parser

UP_DEFAULTS: dict[str, Any] = {
    "command": "up", "image": None, "instance_type": "ml.g5.xlarge", "region": None,
    # None: 1, or autoscaling's minimum (cli._up_options decides, once the plan is read)
    "instance_count": None,
    "build": False, "dockerfile": image_ops.DEFAULT_DOCKERFILE, "context": image_ops.REPO_ROOT, "build_arg": [],
    "skip_label_check": False, "no_wait": False, "dry_run": False, "voice": "af_heart", "max_text_chars": 5000,
    "max_message_bytes": 262144, "env": [], "startup_timeout": 600, "wait_timeout": 1800.0, "poll_interval": 15.0,
    **{"autoscale_min": None, "autoscale_max": None, "autoscale_target": None, "autoscale_scale_in": None,
       "plan": None, "alarms": False, "first_audio_p95_ms": 500.0, "dashboard": False, "force": False},
}
DOWN_DEFAULTS: dict[str, Any] = {
    "command": "down", "purge": False, "region": None, "dry_run": False, "wait_timeout": 1200.0,
    "poll_interval": 10.0,
}
CASES: list[tuple[list[str], dict[str, Any]]] = [
    (["up", "--name", "kokoro-tts", "--image", "r:1", "--role-arn", "arn:x"],
     {**UP_DEFAULTS, "name": "kokoro-tts", "image": "r:1", "role_arn": "arn:x"}),
    (["up", "--name", "n", "--role-arn", "a", "--build", "--build-arg", "A=1", "--build-arg", "B=2",
      "--env", "K=V", "--env", "X=", "--instance-type", "ml.g6.xlarge", "--instance-count", "2",
      "--region", "eu-west-1", "--skip-label-check", "--no-wait", "--dry-run", "--voice", "af_bella",
      "--max-text-chars", "100", "--max-message-bytes", "2000", "--startup-timeout", "60",
      "--wait-timeout", "5", "--poll-interval", "0.5", "--dockerfile", "D", "--context", "C",
      "--autoscale-min", "2", "--autoscale-max", "4", "--autoscale-target", "3", "--autoscale-scale-in", "1",
      "--plan", "P.json", "--alarms", "--first-audio-p95-ms", "400", "--dashboard", "--force"],
     {"command": "up", "name": "n", "role_arn": "a", "image": None, "build": True, "build_arg": ["A=1", "B=2"],
      "env": [("K", "V"), ("X", "")], "instance_type": "ml.g6.xlarge", "instance_count": 2,
      "region": "eu-west-1", "skip_label_check": True, "no_wait": True, "dry_run": True, "voice": "af_bella",
      "max_text_chars": 100, "max_message_bytes": 2000, "startup_timeout": 60, "wait_timeout": 5.0,
      "poll_interval": 0.5, "dockerfile": Path("D"), "context": Path("C"),
      "autoscale_min": 2, "autoscale_max": 4, "autoscale_target": 3.0, "autoscale_scale_in": 1.0,
      "plan": Path("P.json"), "alarms": True, "first_audio_p95_ms": 400.0, "dashboard": True, "force": True}),
    (["down", "--name", "n"], {**DOWN_DEFAULTS, "name": "n"}),
    (["down", "--name", "n", "--purge", "--region", "r", "--dry-run", "--wait-timeout", "3", "--poll-interval", "1"],
     {"command": "down", "name": "n", "purge": True, "region": "r", "dry_run": True, "wait_timeout": 3.0,
      "poll_interval": 1.0}),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=["up-minimal", "up-every-option", "down", "down-all"])
def test_a_command_line_parses_to_the_same_namespace(argv: list[str], expected: dict[str, Any]) -> None:
    assert vars(build_parser().parse_args(argv)) == expected


@pytest.mark.parametrize("argv", [["up", "--name", "n", "--role-arn", "a", "--env", "NOEQUALS"],
                                  ["down", "--name", "n", "--build"], ["sideways"], []])
def test_wrong_input_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(argv)
    assert done.value.code == 2
    assert "error:" in capsys.readouterr().err
