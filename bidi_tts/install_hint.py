"""The install command that works from where the user stands, for a missing extra.

No `bidi-tts` package is published, so `pip install 'bidi-tts[hearing]'` fails. What works:
- in a checkout (the package imports from a folder holding the project's pyproject.toml): `uv sync --extra X`;
- installed from a wheel, a folder or a git URL: pip records where (PEP 610's direct_url.json), and
  the same source with the extra added installs it;
- anything else: build the wheel from the repository and install it with the extra.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlsplit

DIST = "bidi-tts"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def _checkout() -> Path | None:
    pyproject = PACKAGE_ROOT / "pyproject.toml"
    if pyproject.is_file() and 'name = "bidi-tts"' in pyproject.read_text(encoding="utf-8", errors="replace"):
        return PACKAGE_ROOT
    return None


def _direct_url() -> dict[str, object] | None:
    try:
        text = distribution(DIST).read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    try:
        data = json.loads(text) if text else None
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def install_command(extra: str, *, checkout: Path | None = None, direct_url: dict[str, object] | None = None,
                    detect: bool = True) -> str:
    """The command that adds `extra` here (`checkout`/`direct_url` are found when `detect`)."""
    if detect:
        checkout = _checkout()
        direct_url = _direct_url()
    dir_info = (direct_url or {}).get("dir_info")
    editable = isinstance(dir_info, dict) and bool(dir_info.get("editable"))
    if checkout is not None and (direct_url is None or editable):
        return f"uv sync --extra {extra}"
    url = str((direct_url or {}).get("url", ""))
    parts = urlsplit(url)
    if parts.scheme == "file":
        return f"pip install '{unquote(parts.path)}[{extra}]'"  # the wheel file, or the folder, it came from
    vcs = (direct_url or {}).get("vcs_info")
    if url and isinstance(vcs, dict):
        ref = f"@{vcs['commit_id']}" if vcs.get("commit_id") else ""
        return f"pip install 'bidi-tts[{extra}] @ {vcs.get('vcs', 'git')}+{url}{ref}'"
    return (f"build the wheel in a checkout (uv build) and pip install "
            f"'dist/bidi_tts-VERSION-py3-none-any.whl[{extra}]' (no bidi-tts package is published)")


def install_hint(extra: str) -> str:
    return f"install the '{extra}' extra: {install_command(extra)}"
