"""How fast and how precisely the suite fails single-defect containers (issue 11's measurement).

Runs the whole suite, as the pytest plugin does (calibrated timeouts, quiet-container probes), against
a good toy and a set of single-defect toys, each at two speeds: "fast" (the toys as they are) and
"slow" (about a CPU Kokoro's pace: 0.5 s before each sentence's audio, streamed at 0.3x real time).
The content.* cases are left out: these toys speak in tones (test_content_cases.py proves those
cases with speaking toys). Prints, per container: wall seconds, the calibrated silence, which cases
failed, and whether one of them cites the clause the defect breaks. Numbers, not pass/fail: see
docs/verdicts.md.

    uv run python bench/bench_verdicts.py [--speeds fast slow] [--only NAME ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import Verdict
from bidi_tts_conformance.runner import SuiteRunner
from bidi_tts_conformance.targets import Target
from tests.toys import broken, broken_session, samples
from tests.toys.good import ServerThread, ToyContainer


@dataclass(frozen=True)
class Subject:
    name: str
    make: Callable[[], ToyContainer]
    clauses: tuple[str, ...]  # the clauses the defect breaks (empty: a good container)


SUBJECTS = [
    Subject("good", ToyContainer, ()),
    Subject("never_complete", broken.NoCompleteToy, ("TTS-ORDER",)),
    Subject("ignores_close", broken.IgnoreCloseToy, ("TTS-CLOSE",)),
    Subject("wrong_close_code", broken.WrongCloseCodeToy, ("TTS-CLOSE",)),
    Subject("receive_text_only", broken.TextOnlyToy, ("TTS-BINARY-IN",)),
    Subject("no_streaming", broken.NoStreamToy, ("TTS-STREAM",)),
    Subject("global_lock", broken_session.GlobalLockToy, ("TTS-ISOLATION",)),
    Subject("base64_audio", broken.Base64AudioToy, ("TTS-AUDIO",)),
    Subject("close_after_first", broken.CloseAfterFirstToy, ("TTS-SESSION",)),
    Subject("leaks_str_e", broken.LeakyErrorsToy, ("TTS-ERROR",)),
    Subject("sample_like", samples.SampleLikeToy, ("TTS-AUDIO", "TTS-ISOLATION")),
    Subject("runaway", samples.RunawayToy, ("TTS-ERROR",)),
]


def slow_down(toy: ToyContainer) -> ToyContainer:
    toy.config.first_audio_delay_s = max(toy.config.first_audio_delay_s, 0.5)
    toy.config.realtime_factor = max(toy.config.realtime_factor, 0.3)
    return toy


def run(subject: Subject, speed: str) -> dict[str, object]:
    toy = subject.make()
    if speed == "slow":
        slow_down(toy)
    with ServerThread(toy.app()) as server:
        runner = SuiteRunner(Target(kind="url", base_url=server.url), Options())
        started = time.perf_counter()
        results = [runner.run(case) for case in REGISTRY if case.group != "content"]
        seconds = time.perf_counter() - started
    failed = [r for r in results if r.verdict is Verdict.FAILED]
    cited = sorted({c for r in failed for c in r.case.clauses} & set(subject.clauses))
    assert runner.calibration is not None
    return {"container": subject.name, "speed": speed, "seconds": round(seconds, 1),
            "silence_s": round(runner.options.silence, 2), "failed": [r.case.id for r in failed],
            "busy_notes": sum(1 for r in results if r.verdict is Verdict.NOT_JUDGED and "still busy" in r.detail),
            "right_clause": bool(cited) if subject.clauses else not failed}


def main() -> int:
    # The toys' own complaints about clients that left (the suite leaves on purpose) are noise here.
    for name in ("asyncio", "uvicorn.error"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speeds", nargs="+", choices=("fast", "slow"), default=["fast", "slow"])
    parser.add_argument("--only", nargs="+", help="containers to run (default: all)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    unknown = set(args.only or []) - {s.name for s in SUBJECTS}
    if unknown:
        parser.error(f"unknown container(s): {', '.join(sorted(unknown))}")
    rows = []
    print(f"{'container':<18} {'speed':<5} {'seconds':>7} {'silence':>7} {'failed':>6}  right clause  cases")
    for speed in args.speeds:
        for subject in SUBJECTS:
            if args.only and subject.name not in args.only:
                continue
            row = run(subject, speed)
            rows.append(row)
            failed = row["failed"]
            assert isinstance(failed, list)
            shown = ", ".join(failed[:6]) + (f" (+{len(failed) - 6})" if len(failed) > 6 else "")
            print(f"{row['container']:<18} {speed:<5} {row['seconds']:>7} {row['silence_s']:>7} {len(failed):>6}  "
                  f"{'yes' if row['right_clause'] else 'NO':<12}  {shown}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
