"""Recognition seconds per audio second of the content checks' recognizer (faster-whisper, Whisper base, int8).

Speech comes from a running container (``--container-url``, POST /invocations; the reference container
gives Kokoro speech) or, without one, from espeak-ng. The content.* cases' texts are transcribed one
clip per call (as content.intelligible.1 and content.order.1 do) and packed into one call (as
content.session.1, content.concurrent.1 and the load test's verifier do). Wall and CPU seconds are
printed, with the word error rate, so a busy machine shows as CPU < wall.

Run: ``uv run python bench/container/bench_recognizer.py [--container-url http://127.0.0.1:8080] [--rounds 3]``
(``BIDI_TTS_WHISPER_MODEL`` selects another faster-whisper model).
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx

from bidi_tts_conformance.cases.content import CONCURRENT, INTELLIGIBLE, ORDER, SESSION
from bidi_tts_hearing import recognizer, transcribe_each, word_error_rate

RATE = 24_000
TEXTS = [" ".join(INTELLIGIBLE), " ".join(ORDER), *SESSION, *CONCURRENT]


def speech(text: str, container_url: str | None) -> bytes:
    if container_url is None:
        from tests.toys.speaking import speak

        return speak(text, RATE)
    reply = httpx.post(f"{container_url}/invocations", json={"text": text, "sample_rate": RATE}, timeout=120)
    reply.raise_for_status()
    return reply.content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--container-url", help="a running container (default: espeak-ng speech)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    clips = [speech(t, args.container_url) for t in TEXTS]
    audio_s = sum(len(c) for c in clips) / 2 / RATE
    wall, cpu = time.perf_counter(), time.process_time()
    ears = recognizer()
    print(f"model load: {time.perf_counter() - wall:.2f} s wall, {time.process_time() - cpu:.2f} s CPU "
          f"({getattr(ears, 'model_name', '?')})")
    source = args.container_url or "espeak-ng"
    print(f"speech: {source}, {len(clips)} clips, {audio_s:.1f} s of audio")
    for label, run in (("one call per clip", lambda: [ears.transcribe(c, RATE) for c in clips]),
                       ("packed (transcribe_each)", lambda: transcribe_each(ears, [(c, RATE) for c in clips]))):
        walls, cpus = [], []
        for _ in range(args.rounds):
            wall, cpu = time.perf_counter(), time.process_time()
            heard = run()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        wer = statistics.mean(word_error_rate(t, h) for t, h in zip(TEXTS, heard, strict=True))
        print(f"{label:26s} {statistics.median(walls) / audio_s:.3f} s wall per audio s "
              f"({statistics.median(walls):.2f} s), {statistics.median(cpus) / audio_s:.3f} s CPU per audio s; "
              f"mean WER {wer:.2f}")


if __name__ == "__main__":
    main()
