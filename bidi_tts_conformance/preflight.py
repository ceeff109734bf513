"""Up-front checks: a bad command line or a target that cannot be checked is one line, not a
failure per case.

Runs from the plugin's ``pytest_cmdline_main``, after the options are parsed and before pytest
configures its session, so nothing else is printed around the line:

- usage errors (exit 4, pytest's own ``ERROR: ...`` line): a ``--container-url`` without an http(s)
  scheme, both ``--container-url`` and ``--endpoint-name``, a ``--case`` glob or ``--clause`` that
  selects nothing, a malformed ``--region`` or ``--endpoint-url``, a missing ``--endpoint-ca`` file,
  the SageMaker SDK not installed, and, with no target given, a reference container that cannot start
  here (its dependencies not installed and no Docker image);
- the target cannot be reached or is not a container (exit :data:`EXIT_UNREACHABLE`, 69, sysexits'
  EX_UNAVAILABLE): nothing listens, nothing answers within a few seconds, the URL is some other HTTP
  server (``/ping`` not 200 and no WebSocket at ``/invocations-bidirectional-stream``), a container
  still loading (``/ping`` 503) that does not become ready within ``--ready-timeout``; for an
  endpoint: no AWS credentials, a region whose runtime host does not resolve, a runtime (or stand-in)
  that does not answer, an unknown endpoint, an endpoint whose container does not answer.

The checks of a target live beside this module, one job each: :mod:`.preflight_container` (a
``--container-url``), :mod:`.preflight_ping` (its ``/ping`` and the wait while it loads),
:mod:`.preflight_endpoint` (an ``--endpoint-name``) and :mod:`.preflight_net` (TCP, TLS, DNS).
The target checks run only when the command collects the conformance cases (a path argument is, or
holds, a ``test_cases.py`` that defines them), not in listings (``--list-cases``, ``--collect-only``,
``--help``).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bidi_tts import exit_codes
from bidi_tts.dialects import DEFAULT_DIALECT, BadRoute, dialect_at
from bidi_tts.install_hint import install_command
from bidi_tts_conformance import selection
from bidi_tts_conformance.preflight_container import DEFAULT_READY_TIMEOUT_S, check_url, progress_line
from bidi_tts_conformance.preflight_endpoint import check_endpoint
from bidi_tts_conformance.preflight_net import Unreachable
from bidi_tts_conformance.targets import docker_available

EXIT_UNREACHABLE = exit_codes.UNREACHABLE  # the target cannot be reached or is not a container

# Options that only list or explain: no target is checked.
LISTING_OPTIONS = ("help", "version", "collectonly", "showfixtures", "show_fixtures_per_test", "markers",
                   "list_cases")
# Modules `python -m reference_container` needs (the `container` extra).
REFERENCE_MODULES = ("uvicorn", "starlette", "soxr", "torch", "kokoro", "misaki")


def add_options(group: pytest.OptionGroup) -> None:
    """The selection and readiness options (called from the plugin's pytest_addoption)."""
    group.addoption("--clause", action="append", default=[], metavar="CLAUSE",
                    help="run only cases citing this contract clause (e.g. TTS-ERROR, 'SM-*'); repeatable")
    group.addoption("--ready-timeout", type=float, default=DEFAULT_READY_TIMEOUT_S, metavar="S",
                    help="seconds to wait for a --container-url whose /ping answers 503 (still loading) "
                         f"to answer 200 (default {DEFAULT_READY_TIMEOUT_S:.0f}, SM-PING's bound)")


def check_command_line(config: pytest.Config) -> int | None:
    """Raise pytest.UsageError for a bad command line; print one line and return
    :data:`EXIT_UNREACHABLE` for a target that cannot be checked; None to go on."""
    opt = config.getoption
    if getattr(config.option, "help", False) or getattr(config.option, "version", False):
        return None
    url = opt("container_url", None)
    endpoint = opt("endpoint_name", None)
    if url:
        parts = urlsplit(str(url))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise pytest.UsageError(f"--container-url {url!r} is not an http(s) URL; give it as http://HOST:PORT "
                                    "(e.g. http://127.0.0.1:8080)")
        if endpoint:
            raise pytest.UsageError("give --container-url or --endpoint-name, not both")
    try:
        dialect_at(opt("dialect", None) or DEFAULT_DIALECT, opt("ws_path", None))
    except BadRoute as exc:
        raise pytest.UsageError(str(exc)) from None
    globs, clauses = opt("case", None) or [], opt("clause", None) or []
    if selection.selecting(globs, clauses):
        from bidi_tts_conformance.cases import REGISTRY

        try:
            selection.check(REGISTRY, globs, clauses)
        except selection.SelectionError as exc:
            raise pytest.UsageError(str(exc)) from None
    if any(getattr(config.option, name, False) for name in LISTING_OPTIONS) or not runs_cases(config):
        return None
    try:
        if url:
            check_url(str(url).rstrip("/"), ready_timeout=float(opt("ready_timeout")), progress=progress_line,
                      ws_path=dialect_at(opt("dialect", None) or DEFAULT_DIALECT, opt("ws_path", None)).ws_path)
        elif endpoint:
            check_endpoint(str(endpoint), region=str(opt("region")), endpoint_url=opt("endpoint_url"),
                           ca_file=opt("endpoint_ca"))
        else:
            check_reference(str(opt("target")), str(opt("image")))
    except Unreachable as exc:
        print(f"ERROR: {exc}", file=sys.stderr, flush=True)
        return EXIT_UNREACHABLE
    return None


def runs_cases(config: pytest.Config) -> bool:
    """Whether the command collects the conformance cases: a path argument is a ``test_cases.py``
    that defines them or a folder holding one (itself, ``conformance/`` or ``bidi_tts_conformance/``)."""
    for arg in config.args:
        path = Path(config.invocation_params.dir, str(arg).split("::")[0])
        if path.is_dir():
            candidates = [path / "test_cases.py", path / "conformance" / "test_cases.py",
                          path / "bidi_tts_conformance" / "test_cases.py"]
        else:
            candidates = [path]
        for candidate in candidates:
            if candidate.name == "test_cases.py" and candidate.is_file() and _defines_cases(candidate):
                return True
    return False


def _defines_cases(path: Path) -> bool:
    try:
        return "conformance_cases" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


# -- the reference container -----------------------------------------------------------------------
def missing_reference_modules(modules: Sequence[str] = REFERENCE_MODULES) -> list[str]:
    """The reference container's dependencies that are not installed."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def check_reference(kind: str, image: str) -> None:
    """With no target given the suite starts the reference container: as a process, that needs
    the `container` extra; `--target auto` falls back to a Docker image when an engine holds it."""
    if kind == "docker":
        return
    missing = missing_reference_modules()
    if not missing:
        return
    docker_note = ""
    if kind == "auto":
        available, why = docker_available(image)
        if available:
            return
        docker_note = f"; nor can Docker run its image instead: {why}"
    raise pytest.UsageError(
        "no --container-url or --endpoint-name, so the suite starts the reference container, but its "
        f"dependencies are not installed here (missing {', '.join(missing)}){docker_note}. "
        f"Install the 'container' extra ({install_command('container')}), or check a running container with "
        "--container-url http://HOST:PORT")
