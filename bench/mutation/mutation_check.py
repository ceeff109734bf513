"""The conformance suite as the test of a (mutated) reference container: exit 0 when every case
passes, 1 when one fails (the mutant is killed), 2 when the container did not start.

Serves the reference container in this process, from the source tree this script sits in (which
bench/mutation/bench_mutation.py mutates), with a fast fake synthesizer (a tone as long as the text, in 0.2 s
chunks), and runs every case but content.* (they need speech) in the plugin's order, as the plugin
does. Prints the cases that failed, one line each.

    uv run python bench/mutation/mutation_check.py [--case GLOB ...]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bidi_tts_conformance import selection
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import Verdict
from bidi_tts_conformance.ping_log import PingLog
from bidi_tts_conformance.runner import SuiteRunner
from bidi_tts_conformance.targets import Target, wait_ready

AUDIO_S_PER_CHAR = 0.06
LEAD_S, TAIL_S = 0.3, 0.45  # Kokoro's silence around each unit
# Seconds of work per second of audio: fast, yet a long message takes long enough (about 0.7 s for
# cancel.1's 600 characters) to have a moment mid-synthesis; faster, the cancel cases are NOT-JUDGED.
REAL_TIME_FACTOR = 0.03
LOAD_S = 1.0  # the model's loading time: a window in which /ping must answer 503


class FastSynth:
    """A fake model: a 220 Hz tone, AUDIO_S_PER_CHAR seconds per character at speed 1, made in
    REAL_TIME_FACTOR of its length, one chunk per unit, padded like Kokoro's units (0.3 s of silence
    before, 0.45 s after), so that the container's silence trimming at joins runs as on the real model."""

    name = "fast-fake"
    sample_rate = 24_000

    @property
    def voices(self) -> frozenset[str]:
        return frozenset({"af_heart", "af_bella", "am_adam", "bf_emma"})

    def load(self) -> None:
        time.sleep(LOAD_S)

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        samples = max(1, int(len(text) * AUDIO_S_PER_CHAR / speed * self.sample_rate))
        t = np.arange(samples, dtype=np.float32) / self.sample_rate
        audio = np.concatenate([np.zeros(int(LEAD_S * self.sample_rate), np.float32),
                                (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32),
                                np.zeros(int(TAIL_S * self.sample_rate), np.float32)])
        time.sleep(REAL_TIME_FACTOR * len(audio) / self.sample_rate)
        yield audio  # one chunk per unit, as one model call of the real synthesizers makes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--case", action="append", default=[], help="only cases matching this glob")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    try:
        from tests.container.helpers import serve_app

        ping_log = PingLog()
        server = serve_app(FastSynth())
        server.__enter__()
    except Exception as exc:  # a mutant that breaks the import or the start: killed as well
        print(f"the container did not start: {type(exc).__name__}: {exc}")
        return 2
    try:
        try:  # the model "loads" in the background: /ping's answers until then are health.ping.loading.1's
            wait_ready(server.url, 30.0, lambda _: None, server.thread.is_alive, ping_log)
        except RuntimeError as exc:
            print(f"FAILED (start): {exc}")
            return 1
        cases = [c for c in selection.run_order(selection.select(REGISTRY, args.case or None))
                 if c.group != "content"]
        runner = SuiteRunner(Target(kind="url", base_url=server.url, ping_log=ping_log), Options())
        failed = []
        for case in cases:
            result = runner.run(case)
            if result.verdict is Verdict.FAILED:
                failed.append(case.id)
                print(f"FAILED {case.id}: {result.detail[:200]}", flush=True)
            elif result.verdict is Verdict.NOT_JUDGED:  # a case this fake model could not exercise
                print(f"NOT-JUDGED {case.id}: {result.detail[:200]}", flush=True)
    finally:
        server.server.should_exit = True
        server.thread.join(timeout=10)
    print(f"{len(failed)} of {len(cases)} cases failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
