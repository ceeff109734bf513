"""Soft onsets survive the leading-silence cut: real Kokoro, trimmed and not, heard by the recognizer.

Synthesizes sentences that start with soft consonants ("h", "f", "s", "th", "sh", "p", "w") with the
reference container's backend (int8 ONNX by default), cuts each with
:func:`reference_container.onset.trim_onset`, and transcribes both versions with the suite's
recognizer (faster-whisper base, ``bidi_tts_hearing``). Prints per sentence: leading
time to the first sample at -40 dBFS before and after the cut, and the first word heard in each.
The cut passes when every first word is heard in the trimmed audio as in the untrimmed one.

    uv run python bench/container/bench_onsets.py            # needs the model parts and the hearing extra
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

SENTENCES = (
    "Hello, this is your driver.",
    "Five new messages arrived.",
    "So we meet again.",
    "She left before noon.",
    "Thanks for waiting.",
    "Perhaps we should go.",
    "Which one do you want?",
    "Fine, I will call later.",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--voices-dir", default=os.environ.get("KOKORO_VOICES_DIR", "../shared/kokoro/voices"))
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bidi_tts.audio import first_audible_sample, float_to_pcm16
    from bidi_tts_hearing import recognizer, unavailable_reason
    from bidi_tts_hearing.text import words
    from reference_container.onset import trim_onset
    from reference_container.settings import parse_settings
    from reference_container.synthesizers.factory import build_synthesizer

    reason = unavailable_reason()
    if reason:
        print(f"bench_onsets: the recognizer is not available: {reason}", file=sys.stderr)
        return 2
    settings = parse_settings(["--backend", "onnx"], env={"KOKORO_VOICES_DIR": args.voices_dir})
    synth = build_synthesizer(settings)
    synth.load()
    ears = recognizer()
    rate = synth.sample_rate
    failures = 0
    print(f"{'sentence':<30} {'lead before':>11} {'after':>7}  first word heard (untrimmed / trimmed)")
    for text in SENTENCES:
        audio = np.concatenate(list(synth.synthesize(text, args.voice, 1.0)))
        cut = trim_onset(audio, rate)
        before, after = float_to_pcm16(audio), float_to_pcm16(cut)
        lead_before = (first_audible_sample(before) or 0) / rate * 1000
        lead_after = (first_audible_sample(after) or 0) / rate * 1000
        heard_before, heard_after = words(ears.transcribe(before, rate)), words(ears.transcribe(after, rate))
        first = words(text)[0]
        ok = bool(heard_after) and heard_after[0] == first
        failures += not ok
        print(f"{text:<30} {lead_before:>9.0f}ms {lead_after:>5.0f}ms  "
              f"{(heard_before or ['-'])[0]} / {(heard_after or ['-'])[0]}{'' if ok else '  <- LOST'}")
    print(f"{len(SENTENCES) - failures} of {len(SENTENCES)} first words heard after the cut")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
