"""The locked dependencies stay clear of the advisories the project tracks (issue 7, security)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _audit_module():
    spec = importlib.util.spec_from_file_location("audit_dependencies", ROOT / "scripts" / "audit_dependencies.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


audit = _audit_module()


def test_locked_torch_is_at_least_2_10() -> None:
    locked = audit.locked_versions(ROOT / "uv.lock")
    assert "torch" in locked, "torch must be in the lock (the container's production route)"
    assert Version(locked["torch"]) >= Version("2.10"), f"locked torch {locked['torch']} carries PYSEC-2026-2286"


def test_lock_is_clear_of_tracked_advisories() -> None:
    locked = audit.locked_versions(ROOT / "uv.lock")
    assert audit.offline_findings(locked, ROOT / "security" / "advisories.toml") == []


@pytest.mark.parametrize(("version", "flagged"), [("2.9.1", True), ("2.10.0", False), ("2.15.0", False)])
def test_offline_check_flags_an_old_torch(tmp_path: Path, version: str, flagged: bool) -> None:
    lock = tmp_path / "uv.lock"
    lock.write_text(f'version = 1\n\n[[package]]\nname = "torch"\nversion = "{version}"\n')
    findings = audit.offline_findings(audit.locked_versions(lock), ROOT / "security" / "advisories.toml")
    assert bool(findings) is flagged
    if flagged:
        assert findings[0].advisory == "PYSEC-2026-2286"
