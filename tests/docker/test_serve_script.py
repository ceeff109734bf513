"""docker/serve, SageMaker's entry point, without Docker: a stand-in `python` records what it gets."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SERVE = Path(__file__).resolve().parents[2] / "docker" / "serve"


@pytest.fixture
def fake_python(tmp_path: Path) -> Path:
    """A folder whose `python` prints its arguments, one a line."""
    exe = tmp_path / "python"
    exe.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    exe.chmod(0o755)
    return tmp_path


def run_serve(fake_python: Path, *args: str, **env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != "SAGEMAKER_BIND_TO_PORT"}
    environ.update(env, PATH=f"{fake_python}:{environ['PATH']}")
    out = subprocess.run(["sh", str(SERVE), *args], env=environ, capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


PINNED = ["-m", "reference_container", "--host", "0.0.0.0", "--port", "8080"]


def test_serve_runs_the_pinned_command_on_all_interfaces_port_8080(fake_python: Path) -> None:
    assert run_serve(fake_python) == PINNED


def test_serve_drops_a_leading_serve_argument(fake_python: Path) -> None:
    # With an ENTRYPOINT of serve, `docker run IMAGE serve` would pass "serve" on to it.
    assert run_serve(fake_python, "serve") == PINNED


def test_serve_passes_extra_arguments_to_the_server(fake_python: Path) -> None:
    assert run_serve(fake_python, "serve", "--log-level", "debug") == [*PINNED, "--log-level", "debug"]


def test_serve_binds_the_port_sagemaker_asks_for(fake_python: Path) -> None:
    assert run_serve(fake_python, SAGEMAKER_BIND_TO_PORT="9090")[-1] == "9090"


def test_serve_is_executable() -> None:
    assert os.access(SERVE, os.X_OK)
