"""Shared by the planner's tests: the sample's scenario as a command line, and one in-process run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bidi_tts_loadtest.plan.cli import main

SAMPLE_LADDER = Path(__file__).with_name("data") / "ladder_g5_sample.json"
#: "--trace none": these plans are checked for their arithmetic; the plan's own simulation has tests of its own
POLICY = ["--trace", "none", "--slo-ms", "3000", "--scale-out-s", "320", "--surge", "1.25",
          "--instance-type", "ml.g5.xlarge"]
#: The AWS sample's scenario: its g5 ladder, 5000 rps at peak, 10 at the trough.
SAMPLE = ["--ladder", str(SAMPLE_LADDER), "--peak-rps", "5000", "--trough-rps", "10", *POLICY]
#: The same numbers by hand (no ladder).
HAND = ["--qmax", "50", "--rps-at-qmax", "17.87", "--service-p95-ms", "66.1", "--service-mean-ms", "61.3",
        "--chars-per-request", "25.2", "--peak-rps", "5000", "--trough-rps", "10", *POLICY]
#: Sessions: H = 16 held (the h200-eager sweep's figure at a 300 ms p95, docs/capacity.md).
SESSIONS = ["--held-sessions", "16", "--peak-sessions", "2000", "--trough-sessions", "20", "--trace", "none",
            "--slo-ms", "300", "--scale-out-s", "320", "--surge", "1.25", "--instance-type", "ml.g5.xlarge"]


def ladder_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SAMPLE_LADDER.read_text())
    return data


def write_ladder(tmp_path: Path, data: Any, name: str = "ladder.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def run(tmp_path: Path, argv: list[str]) -> tuple[int, dict[str, Any]]:
    """(exit code, the --json plan) of one in-process run."""
    out = tmp_path / "plan.json"
    code = main([*argv, "--json", str(out)])
    return code, json.loads(out.read_text())


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one stderr line of a run that must stop with exit 4 before planning anything."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 4
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]
