"""Audit the locked dependencies (uv.lock) for known vulnerabilities.

Two checks, both on the exact versions in uv.lock:
1. offline: security/advisories.toml, a short list of advisories this project tracks by hand
   (always runs, needs no network);
2. online: pip-audit against PyPI's vulnerability data for every locked package.

Exit 1 when either finds a vulnerable version. When the online service cannot be reached (as on
machines whose PyPI mirror serves no JSON API), say so plainly and rely on the offline list rather
than reporting a clean bill of health that was never checked; `--require-online` makes that an error.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Finding:
    package: str
    version: str
    advisory: str
    fixed_in: str


def locked_versions(lock_path: Path) -> dict[str, str]:
    """Package name -> version for every package in a uv.lock."""
    data = tomllib.loads(lock_path.read_text())
    return {p["name"]: p["version"] for p in data.get("package", []) if "version" in p}


def offline_findings(locked: dict[str, str], advisories_path: Path) -> list[Finding]:
    advisories = tomllib.loads(advisories_path.read_text()).get("advisory", [])
    findings = []
    for adv in advisories:
        version = locked.get(adv["package"])
        if version is not None and Version(version) < Version(adv["fixed_in"]):
            findings.append(Finding(adv["package"], version, adv["id"], adv["fixed_in"]))
    return findings


def online_audit(lock_dir: Path) -> tuple[list[Finding], int, int]:
    """Run pip-audit on the exported lock: (findings, audited count, unreachable count)."""
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        export = subprocess.run(
            ["uv", "export", "--frozen", "--all-extras", "--all-groups", "--no-emit-project",
             "--no-hashes", "--format", "requirements-txt", "-o", str(req)],
            cwd=lock_dir, capture_output=True, text=True, check=False,
        )
        if export.returncode != 0:
            raise SystemExit(f"audit: uv export failed: {export.stderr.strip()}")
        run = subprocess.run(
            [sys.executable, "-m", "pip_audit", "-r", str(req), "--no-deps", "--disable-pip",
             "--progress-spinner", "off", "--format", "json"],
            capture_output=True, text=True, check=False, timeout=900,
        )
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"audit: pip-audit gave no report: {run.stderr.strip()[-500:]}") from None
    findings, audited, unreachable = [], 0, 0
    for dep in report.get("dependencies", []):
        if "skip_reason" in dep:
            unreachable += 1
            continue
        audited += 1
        for vuln in dep.get("vulns", []):
            fixed = ", ".join(vuln.get("fix_versions", [])) or "no fix yet"
            findings.append(Finding(dep["name"], dep["version"], vuln["id"], fixed))
    return findings, audited, unreachable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lock", type=Path, default=ROOT / "uv.lock")
    parser.add_argument("--advisories", type=Path, default=ROOT / "security" / "advisories.toml")
    parser.add_argument("--offline", action="store_true", help="skip the online pip-audit run")
    parser.add_argument("--require-online", action="store_true",
                        help="fail when PyPI's vulnerability data cannot be reached")
    args = parser.parse_args()

    locked = locked_versions(args.lock)
    findings = offline_findings(locked, args.advisories)
    print(f"audit: {len(locked)} locked packages; offline advisory list: {len(findings)} finding(s)")
    if not args.offline:
        online, audited, unreachable = online_audit(args.lock.parent)
        findings += online
        if audited == 0:
            msg = (f"audit: WARNING: pip-audit could not reach PyPI's vulnerability data for any of "
                   f"{unreachable} packages; only the offline advisory list was checked")
            print(msg)
            if args.require_online:
                return 2
        else:
            print(f"audit: pip-audit checked {audited} packages ({unreachable} not found on PyPI): "
                  f"{len(online)} finding(s)")
    for f in findings:
        print(f"audit: VULNERABLE {f.package} {f.version}: {f.advisory} (fixed in {f.fixed_in})")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
