"""Mutation score of the conformance suite over the reference container's protocol modules (issue 23).

cosmic-ray (from PyPI, run through uvx so that it is no dependency of the project) enumerates the
mutants of reference_container/{ws_session,streaming,http_routes,segments}.py; this script draws a
seeded sample of them and, for each, applies it to a scratch copy of the repository
(`cosmic-ray apply`), runs bench/mutation/mutation_check.py there (the whole suite but content.* against the
mutated container with a fast fake synthesizer) and records killed (a case failed, or the container
did not start) or survived. Prints each mutant with the cases that killed it, and the score. Slow
(about a minute a mutant on a quiet machine): not CI.

    uv run python bench/mutation/bench_mutation.py [--sample 40] [--seed 23] [--json OUT] [--keep DIR]
    uv run python bench/mutation/bench_mutation.py --mutant reference_container/ws_session.py:core/NumberReplacer:9
    uv run python bench/mutation/bench_mutation.py --mutant ... --case 'robust.flood.*'   # only these cases as the test

Surviving mutants are judged by hand: docs/verdicts.md lists the equivalent ones with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = [f"reference_container/{name}.py" for name in ("ws_session", "streaming", "http_routes", "segments")]
COPIED = ["bidi_tts", "bidi_tts_conformance", "reference_container", "tests", "bench", "pyproject.toml"]
CHECK_TIMEOUT_S = 180  # the unmutated container takes about 20 s; a mutant that hangs counts as killed


def cosmic_ray() -> list[str]:
    uvx = shutil.which("uvx") or str(Path.home() / ".local/bin/uvx")
    if not Path(uvx).exists():
        raise SystemExit("bench_mutation: needs uvx (comes with uv) to run cosmic-ray from PyPI")
    return [uvx, "--no-python-downloads", "--python", sys.executable, "--from", "cosmic-ray==8.7.0", "cosmic-ray"]


def scratch_copy(where: Path) -> None:
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, where / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, where / name)


def enumerate_mutants(work: Path) -> list[dict[str, object]]:
    config = work / "cosmic-ray.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(MODULES)}\n"
        "timeout = 600.0\nexcluded-modules = []\n"
        f'test-command = "{sys.executable} bench/mutation/mutation_check.py"\n'
        '[cosmic-ray.distributor]\nname = "local"\n')
    session = work / "session.sqlite"
    subprocess.run([*cosmic_ray(), "init", str(config), str(session)], cwd=work, check=True,
                   capture_output=True, text=True)
    dump = subprocess.run([*cosmic_ray(), "dump", str(session)], cwd=work, check=True, capture_output=True,
                          text=True).stdout
    mutants = []
    for line in dump.splitlines():
        item = json.loads(line)[0]
        for m in item["mutations"]:
            mutants.append({"module": m["module_path"], "operator": m["operator_name"],
                            "occurrence": m["occurrence"], "line": m["start_pos"][0]})
    return sorted(mutants, key=lambda m: (str(m["module"]), int(m["line"]), str(m["operator"]),  # type: ignore[call-overload]
                                          int(m["occurrence"])))  # type: ignore[call-overload]


def run_one(work: Path, mutant: dict[str, object], cases: list[str] | None = None) -> dict[str, object]:
    path = work / str(mutant["module"])
    original = path.read_bytes()
    line = original.decode().splitlines()[int(mutant["line"]) - 1].strip()  # type: ignore[call-overload]
    try:
        subprocess.run([*cosmic_ray(), "apply", str(mutant["module"]), str(mutant["operator"]),
                        str(mutant["occurrence"])], cwd=work, check=True, capture_output=True, text=True)
        mutated = path.read_text().splitlines()[int(mutant["line"]) - 1].strip()  # type: ignore[call-overload]
        started = time.perf_counter()
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            selected = [arg for glob in cases or [] for arg in ("--case", glob)]
            proc = subprocess.run([sys.executable, "bench/mutation/mutation_check.py", *selected], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
            code, out = proc.returncode, proc.stdout
        except subprocess.TimeoutExpired:
            code, out = 3, f"the suite did not finish within {CHECK_TIMEOUT_S} s"
        killed_by = [ln.split(":", 1)[0].removeprefix("FAILED ") for ln in out.splitlines()
                     if ln.startswith("FAILED ")]
        return {**mutant, "before": line, "after": mutated, "killed": code != 0, "killed_by": killed_by,
                "exit": code, "seconds": round(time.perf_counter() - started, 1),
                "note": "" if code in (0, 1) else out.strip().splitlines()[-1:]}
    finally:
        path.write_bytes(original)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sample", type=int, default=40, help="how many mutants to draw (0: all)")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--json", type=Path, default=None, help="also write every mutant's outcome here")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    parser.add_argument("--mutant", action="append", default=[], metavar="MODULE:OPERATOR:OCCURRENCE",
                        help="run these mutants (as printed) instead of a sample")
    parser.add_argument("--case", action="append", default=[], metavar="GLOB",
                        help="run only these cases against each mutant (default: all but content.*)")
    args = parser.parse_args()
    if args.sample < 0:
        parser.error("--sample must be 0 (all) or more")
    work = args.keep or Path(tempfile.mkdtemp(prefix="bidi-mutation-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        scratch_copy(work)
        mutants = enumerate_mutants(work)
        chosen = mutants if not args.sample else random.Random(args.seed).sample(mutants, min(args.sample,
                                                                                               len(mutants)))
        if args.mutant:
            wanted = {tuple(m.rsplit(":", 2)) for m in args.mutant}
            chosen = [m for m in mutants if (m["module"], m["operator"], str(m["occurrence"])) in wanted]
            if len(chosen) != len(wanted):
                raise SystemExit(f"bench_mutation: {len(wanted) - len(chosen)} of the --mutant values name no mutant")
        print(f"{len(mutants)} mutants in {', '.join(MODULES)}; running {len(chosen)} (seed {args.seed})", flush=True)
        outcomes = []
        for i, mutant in enumerate(chosen, 1):
            outcome = run_one(work, mutant, args.case)
            outcomes.append(outcome)
            verdict = ("KILLED by " + ", ".join(outcome["killed_by"][:4]) if outcome["killed_by"]  # type: ignore[index]
                       else "KILLED (did not start or finish)" if outcome["killed"] else "SURVIVED")
            print(f"[{i}/{len(chosen)}] {mutant['module']}:{mutant['line']} {mutant['operator']} "
                  f"#{mutant['occurrence']}: {outcome['before']!r} -> {outcome['after']!r}: {verdict} "
                  f"({outcome['seconds']} s)", flush=True)
        killed = sum(1 for o in outcomes if o["killed"])
        print(f"mutation score: {killed}/{len(outcomes)} killed ({100 * killed / max(1, len(outcomes)):.0f}%)")
        if args.json:
            args.json.write_text(json.dumps({"mutants": len(mutants), "sample": outcomes}, indent=2) + "\n")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
