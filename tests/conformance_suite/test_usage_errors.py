"""Bad usage is one line, a documented exit code, in seconds: never a traceback, never a failure per
case. Each test runs the real command in a subprocess (`pytest conformance ...` and
`bidi-tts-conformance ...`) and times it.

Exit codes (preflight.py): 4 a usage error (pytest's own), 69 the target cannot be reached or is not
a container.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import Response

from bidi_tts.gateway import GatewayThread
from bidi_tts.local_container import free_port
from bidi_tts_conformance.preflight import EXIT_UNREACHABLE
from tests.sagemaker.helpers import start_gateway
from tests.toys.good import ServerThread, ToyContainer

ROOT = Path(__file__).resolve().parents[2]
USAGE = 4
LIMIT_S = 10.0
COMMANDS = ("pytest", "cli")
CLI = Path(sys.executable).parent / "bidi-tts-conformance"


def _cli() -> list[str]:
    return [str(CLI)] if CLI.exists() else [sys.executable, "-m", "bidi_tts_conformance"]


def command(kind: str, *args: str, prelude: str = "") -> list[str]:
    """The command line for `kind`; a `prelude` runs in the interpreter first (hides modules)."""
    if prelude:
        call = ("import pytest; sys.exit(pytest.main(ARGS))" if kind == "pytest"
                else "from bidi_tts_conformance.cli import main; sys.exit(main(ARGS))")
        argv = ["conformance/test_cases.py", "-p", "no:cacheprovider", *args] if kind == "pytest" else list(args)
        return [sys.executable, "-c", f"import sys\n{prelude}\nARGS = {argv!r}\n{call}"]
    if kind == "pytest":
        return [sys.executable, "-m", "pytest", "conformance/test_cases.py", "-p", "no:cacheprovider", *args]
    return [*_cli(), *args]


def aws_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No real AWS: no profile, no config files, no metadata service; dummy keys unless removed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"),
               AWS_EC2_METADATA_DISABLED="true", AWS_ACCESS_KEY_ID="AKIDEXAMPLETESTONLY",
               AWS_SECRET_ACCESS_KEY="test-secret-not-real", **extra)
    return env


def run(kind: str, *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT, prelude: str = "",
        timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run(command(kind, *args, prelude=prelude), cwd=cwd,
                          env={**(env or os.environ), "PYTHONUNBUFFERED": "1"},
                          capture_output=True, text=True, timeout=timeout, check=False)
    return proc, time.monotonic() - started


def one_line(proc: subprocess.CompletedProcess[str], code: int, elapsed: float) -> str:
    """The single line the command printed, after checking the exit code and the time."""
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == code, (proc.returncode, lines)
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), lines
    assert "Traceback" not in proc.stderr
    assert elapsed < LIMIT_S, f"took {elapsed:.1f} s: {lines}"
    return lines[0]


# -- usage errors (exit 4) -------------------------------------------------------------------------
@pytest.mark.parametrize("kind", COMMANDS)
def test_a_url_without_a_scheme(kind: str, tmp_path: Path) -> None:
    proc, took = run(kind, "--container-url", "127.0.0.1:8080", cwd=ROOT if kind == "pytest" else tmp_path)
    assert one_line(proc, USAGE, took) == ("ERROR: --container-url '127.0.0.1:8080' is not an http(s) URL; "
                                           "give it as http://HOST:PORT (e.g. http://127.0.0.1:8080)")


@pytest.mark.parametrize("kind", COMMANDS)
def test_a_case_glob_that_matches_nothing(kind: str, tmp_path: Path) -> None:
    proc, took = run(kind, "--container-url", "http://127.0.0.1:9", "--case", "frames.*", "--case", "nope.*",
                     cwd=ROOT if kind == "pytest" else tmp_path)
    assert one_line(proc, USAGE, took) == ("ERROR: --case 'nope.*' matches no case id; list the ids with "
                                           "--list-cases (a glob such as 'errors.*' or 'frames.binary.1')")
    assert not (tmp_path / "reports").exists()  # nothing ran, no report written


@pytest.mark.parametrize("kind", COMMANDS)
def test_an_unknown_clause_lists_the_known_ones(kind: str, tmp_path: Path) -> None:
    proc, took = run(kind, "--clause", "TTS-EROR", cwd=ROOT if kind == "pytest" else tmp_path)
    line = one_line(proc, USAGE, took)
    assert line.startswith("ERROR: --clause 'TTS-EROR' is cited by no case; the clauses the cases cite: ")
    assert "TTS-ERROR, TTS-ISOLATION" in line and "SM-PING" in line


def test_case_and_clause_that_exclude_each_other() -> None:
    proc, took = run("pytest", "--case", "health.*", "--clause", "TTS-ERROR")
    assert "selects no case" in one_line(proc, USAGE, took)


def test_clause_selects_the_cases_citing_it() -> None:
    proc, _ = run("pytest", "--list-cases", "--clause", "tts-error", "--clause", "SM-PING")
    assert proc.returncode == 0, proc.stderr
    listed = [line for line in proc.stdout.splitlines() if line.strip()]
    assert any(line.startswith("errors.") for line in listed)
    assert any(line.startswith("health.ping.") for line in listed)
    assert all("TTS-ERROR" in line or "SM-PING" in line for line in listed), listed
    from bidi_tts_conformance.cases import REGISTRY

    assert len(listed) == sum(1 for c in REGISTRY if {"TTS-ERROR", "SM-PING"} & set(c.clauses))


@pytest.mark.parametrize("kind", COMMANDS)
def test_no_reference_container_installed(kind: str, tmp_path: Path) -> None:
    # A wheel installed with only the `conformance` extra: kokoro and torch are missing, no Docker.
    hide = "for m in ('kokoro', 'torch', 'misaki', 'docker'): sys.modules[m] = None"
    proc, took = run(kind, prelude=hide, cwd=ROOT if kind == "pytest" else tmp_path)
    line = one_line(proc, USAGE, took)
    assert line.startswith("ERROR: no --container-url or --endpoint-name, so the suite starts the reference "
                           "container, but its dependencies are not installed here (missing torch, kokoro, misaki)")
    # from a checkout the command that works is uv's (bidi_tts.install_hint; no package is published)
    assert line.endswith("Install the 'container' extra (uv sync --extra container), or check a running container "
                         "with --container-url http://HOST:PORT")


def test_a_region_that_is_no_region_name(tmp_path: Path) -> None:
    proc, took = run("pytest", "--endpoint-name", "x", "--region", "useast1", env=aws_env(tmp_path))
    assert one_line(proc, USAGE, took) == ("ERROR: --region 'useast1' is not an AWS region name "
                                           "(like us-east-1 or eu-west-2)")


# -- a container URL that cannot be checked (exit 69) ----------------------------------------------
@pytest.mark.parametrize("kind", COMMANDS)
def test_nothing_listening(kind: str, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    proc, took = run(kind, "--container-url", url, cwd=ROOT if kind == "pytest" else tmp_path)
    line = one_line(proc, EXIT_UNREACHABLE, took)
    assert line == f"ERROR: nothing listens at --container-url {url} (connection refused)"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield int(server.getsockname()[1])


@pytest.mark.parametrize("kind", COMMANDS)
def test_a_port_that_never_answers(kind: str, silent_port: int, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{silent_port}"
    proc, took = run(kind, "--container-url", url, cwd=ROOT if kind == "pytest" else tmp_path)
    assert one_line(proc, EXIT_UNREACHABLE, took) == (
        f"ERROR: --container-url {url} accepted a connection but did not answer GET /ping within 3 s; "
        "is it an HTTP container?")


class _NotFound(ToyContainer):
    """An HTTP server that 404s everything, WebSocket included."""

    def app(self):  # type: ignore[no-untyped-def]
        from starlette.applications import Starlette

        return Starlette(routes=[])


@pytest.mark.parametrize("kind", COMMANDS)
def test_an_http_server_that_is_not_a_container(kind: str, tmp_path: Path) -> None:
    with ServerThread(_NotFound().app()) as server:
        proc, took = run(kind, "--container-url", server.url, cwd=ROOT if kind == "pytest" else tmp_path)
    line = one_line(proc, EXIT_UNREACHABLE, took)
    assert line.startswith(f"ERROR: --container-url {server.url} is not a TTS container: GET /ping answered 404 "
                           "and ")
    assert "/invocations-bidirectional-stream" in line


class _Loading(ToyContainer):
    """/ping answers 503 until `ready_after` seconds after the first ping (never, when None)."""

    def __init__(self, ready_after: float | None) -> None:
        super().__init__()
        self.ready_after = ready_after
        self.first: float | None = None
        self.lock = threading.Lock()

    async def ping(self, request: Request) -> Response:
        with self.lock:
            self.first = self.first or time.monotonic()
        ready = self.ready_after is not None and time.monotonic() - self.first >= self.ready_after
        return Response(status_code=200 if ready else 503)


def test_a_loading_container_is_waited_for_with_progress() -> None:
    # Collects all of conformance/: selecting a case deselects the property tests too.
    with ServerThread(_Loading(ready_after=2.5).app()) as server:
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", "--reply-timeout", "5",
             "--container-url", server.url, "--case", "health.ping.1", "--conformance-report", os.devnull],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
        took = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert (f"[conformance] {server.url}/ping answers 503: the container is still loading; waiting up to 480 s "
            "for 200 (--ready-timeout)") in proc.stdout
    assert "[conformance] /ping answered 200 after" in proc.stdout
    assert "1 passed" in proc.stdout and " deselected" in proc.stdout, proc.stdout[-2000:]
    assert took >= 2.5


@pytest.mark.parametrize("kind", COMMANDS)
def test_a_container_that_never_finishes_loading(kind: str, tmp_path: Path) -> None:
    with ServerThread(_Loading(ready_after=None).app()) as server:
        proc, took = run(kind, "--container-url", server.url, "--ready-timeout", "2",
                         cwd=ROOT if kind == "pytest" else tmp_path)
    assert proc.returncode == EXIT_UNREACHABLE, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert errors == [f"ERROR: --container-url {server.url} is still loading: /ping answered 503 for 2 s "
                      "(--ready-timeout)"], proc.stderr
    assert "still loading; waiting up to 2 s" in proc.stdout and "Traceback" not in proc.stdout
    assert took < LIMIT_S


def test_a_run_without_cases_checks_no_target() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance/properties/test_sse_properties.py", "-p", "no:cacheprovider",
         "--container-url", "http://127.0.0.1:9", "-k", "no_such_test_anywhere"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 5, proc.stdout[-2000:] + proc.stderr[-2000:]  # pytest's "no tests ran"


# -- a SageMaker endpoint that cannot be checked (exit 69) -----------------------------------------
@pytest.fixture(scope="module")
def toy_url() -> Iterator[str]:
    with ServerThread(ToyContainer().app()) as server:
        yield server.url


@pytest.fixture
def stand_in(toy_url: str, tmp_path: Path) -> Iterator[GatewayThread]:
    with start_gateway(toy_url, tmp_path / "certs", endpoint_names=frozenset({"toy"})) as gateway:
        yield gateway


def endpoint_args(gateway: GatewayThread, name: str = "toy") -> list[str]:
    return ["--endpoint-name", name, "--endpoint-url", gateway.url, "--endpoint-ca", gateway.ca_file]


def test_a_reachable_endpoint_passes_the_preflight(stand_in: GatewayThread, tmp_path: Path) -> None:
    # health.label.1 skips on an endpoint, so the run ends right after the preflight's one stream.
    proc, took = run("pytest", *endpoint_args(stand_in), "--case", "health.label.1",
                     "--conformance-report", os.devnull, env=aws_env(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1 skipped" in proc.stdout and "ERROR" not in proc.stdout + proc.stderr
    assert took < LIMIT_S


@pytest.mark.parametrize("kind", COMMANDS)
def test_missing_aws_credentials(kind: str, stand_in: GatewayThread, tmp_path: Path) -> None:
    env = aws_env(tmp_path)
    del env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    proc, took = run(kind, *endpoint_args(stand_in), env=env, cwd=ROOT if kind == "pytest" else tmp_path)
    assert one_line(proc, EXIT_UNREACHABLE, took) == (
        "ERROR: endpoint 'toy': no AWS credentials (No credential providers were configured to resolve an "
        "identity.); set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or a role")


@pytest.mark.parametrize("kind", COMMANDS)
def test_a_stand_in_that_is_not_listening(kind: str, tmp_path: Path) -> None:
    url = f"https://127.0.0.1:{free_port()}"
    proc, took = run(kind, "--endpoint-name", "toy", "--endpoint-url", url, env=aws_env(tmp_path),
                     cwd=ROOT if kind == "pytest" else tmp_path)
    line = one_line(proc, EXIT_UNREACHABLE, took)
    assert line == f"ERROR: nothing listens at --endpoint-url {url} (connection refused)"


def test_an_unknown_endpoint(stand_in: GatewayThread, tmp_path: Path) -> None:
    proc, took = run("pytest", *endpoint_args(stand_in, "no-such-endpoint"), env=aws_env(tmp_path))
    assert one_line(proc, EXIT_UNREACHABLE, took) == (
        "ERROR: endpoint 'no-such-endpoint': 400 InputValidationError: Endpoint no-such-endpoint not found; "
        "is --endpoint-name right?")


def test_an_endpoint_whose_container_is_down(tmp_path: Path) -> None:
    with start_gateway(f"http://127.0.0.1:{free_port()}", tmp_path / "certs") as gateway:
        proc, took = run("pytest", *endpoint_args(gateway), env=aws_env(tmp_path))
    line = one_line(proc, EXIT_UNREACHABLE, took)
    assert line.startswith("ERROR: endpoint 'toy': 424 ModelError") and line.endswith(
        "; the endpoint answers but its container does not"), line


def test_an_untrusted_stand_in(stand_in: GatewayThread, tmp_path: Path) -> None:
    proc, took = run("pytest", "--endpoint-name", "toy", "--endpoint-url", stand_in.url, env=aws_env(tmp_path))
    line = one_line(proc, EXIT_UNREACHABLE, took)
    assert line.startswith(f"ERROR: --endpoint-url {stand_in.url}: its TLS certificate is not trusted")
    assert line.endswith("give its CA certificate with --endpoint-ca PATH")


@pytest.mark.parametrize("kind", COMMANDS)
def test_a_region_whose_runtime_does_not_resolve(kind: str, tmp_path: Path) -> None:
    # Never reaches AWS: the name does not exist, so the lookup fails (offline or not).
    proc, took = run(kind, "--endpoint-name", "x", "--region", "xx-nowhere-9", env=aws_env(tmp_path),
                     cwd=ROOT if kind == "pytest" else tmp_path)
    line = one_line(proc, EXIT_UNREACHABLE, took)
    assert "runtime.sagemaker.xx-nowhere-9.amazonaws.com" in line and "region" in line, line
