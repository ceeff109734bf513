"""Throughput of bidi_tts.chunker fed in small fragments, against the seeds' regex chunker.

The seeds' chunker appends each fragment to a buffer and re-splits the whole buffer with
``re.compile(r"(?<=[.!?])\\s+")``; on text whose sentences are long (or never end) its cost per feed
grows with the buffer, so it is quadratic. It is run on a capped prefix and its full cost is
extrapolated (quadratically for the run-on text, linearly for prose, from its measured rate).

It first prints the chunker's score on 48 sentence-boundary rules (``bench/chunker_sse/chunker_golden.py``:
the phenomena of pySBD's English golden rules, our own sentences), and times a third text made of
those 48 examples, which exercises the list, ellipsis and abbreviation paths.

Times are CPU seconds of this process (``time.process_time``), so a busy shared machine skews them
less than wall time would. Run: ``uv run python bench/chunker_sse/bench_chunker.py`` (``--quick`` for 10 KB /
100 KB).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from bidi_tts.chunker import IncrementalSentenceChunker, split_sentences

try:
    from bench.chunker_sse.chunker_golden import GOLDEN, score
except ImportError:  # run as a script: bench/ is on sys.path, not the repository root
    from chunker_golden import GOLDEN, score  # type: ignore[no-redef]

_SEED_SPLIT = re.compile(r"(?<=[.!?])\s+")
_SEED_CAP_S = 1.5  # CPU seconds; stop the seeds' chunker after this long and extrapolate

_PROSE = (
    "Dr. Smith arrived at 9 a.m. and met Mr. Jones of Acme Inc. in the lobby. "
    "They talked about the U.S. market, e.g. prices near $4.99, and version 3.12 of the tool! "
    "Was it worth it? Maybe... but nobody knew for sure. "
    "See https://example.com/a.b?c=d for details.\n"
    "1. First item\n- second item\n\n# Heading\n"
)
_RUN_ON = "and the words go on and on, without any end in sight "


class SeedChunker:
    """The seeds' chunker, verbatim in behaviour: re-split the whole buffer on every feed."""

    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, fragment: str) -> list[str]:
        """Append and re-split everything."""
        self._buffer += fragment
        parts = _SEED_SPLIT.split(self._buffer)
        self._buffer = parts.pop()
        return [p.strip() for p in parts if p.strip()]

    def flush(self) -> str | None:
        """Return the rest."""
        rest, self._buffer = self._buffer.strip(), ""
        return rest or None


_GOLDEN_TEXT = " ".join(text for _, text, _ in GOLDEN) + "\n"
KINDS = ("prose", "run-on", "golden")


def make_text(kind: str, size: int) -> str:
    """`size` characters of prose (many short sentences), one run-on sentence, or the golden examples."""
    unit = {"prose": _PROSE, "run-on": _RUN_ON, "golden": _GOLDEN_TEXT}[kind]
    return (unit * (size // len(unit) + 1))[:size]


def _fragments(text: str, fragment: int) -> Iterator[str]:
    for i in range(0, len(text), fragment):
        yield text[i : i + fragment]


def _time_feed(
    factory: Callable[[], Any], text: str, fragment: int, cap_s: float | None
) -> tuple[float, int, int]:
    """Feed `text` in fragments; return (seconds, characters fed, sentences out), stopping at `cap_s`."""
    chunker = factory()
    fed = count = 0
    start = time.process_time()
    for piece in _fragments(text, fragment):
        count += len(chunker.feed(piece))
        fed += len(piece)
        if cap_s is not None and (fed // fragment) % 64 == 0 and time.process_time() - start > cap_s:
            break
    else:
        count += chunker.flush() is not None
    return time.process_time() - start, fed, count


def run(sizes: tuple[int, ...] = (100_000, 1_000_000), fragment: int = 8) -> list[dict[str, Any]]:
    """Measure both chunkers on prose and run-on text at each size; one row per measurement.

    Rows: ``impl``, ``text``, ``size``, ``fragment``, ``seconds`` (measured or, when
    ``extrapolated``, estimated for the whole size), ``mb_per_s``, ``us_per_kb``, ``sentences``
    (None when extrapolated).
    """
    rows: list[dict[str, Any]] = []
    for kind in KINDS:
        for size in sizes:
            text = make_text(kind, size)
            for impl, factory, cap in (
                ("bidi_tts", IncrementalSentenceChunker, None),
                ("seed-regex", SeedChunker, _SEED_CAP_S),
            ):
                seconds, fed, sentences = _time_feed(factory, text, fragment, cap)
                extrapolated = fed < size
                if extrapolated:
                    ratio = size / fed
                    # Quadratic when the buffer never empties (run-on), linear when it does.
                    seconds *= ratio * ratio if kind == "run-on" else ratio
                rows.append(
                    {
                        "impl": impl,
                        "text": kind,
                        "size": size,
                        "fragment": fragment,
                        "seconds": seconds,
                        "mb_per_s": size / seconds / 1e6,
                        "us_per_kb": seconds / (size / 1000) * 1e6,
                        "sentences": None if extrapolated else sentences,
                        "extrapolated": extrapolated,
                    }
                )
    return rows


def _print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'impl':<11} {'text':<7} {'size':>9} {'frag':>4} {'seconds':>10} {'MB/s':>8} {'µs/KB':>10}  note")
    for r in rows:
        note = "extrapolated" if r["extrapolated"] else f"{r['sentences']} sentences"
        print(
            f"{r['impl']:<11} {r['text']:<7} {r['size']:>9,} {r['fragment']:>4} {r['seconds']:>10.3f} "
            f"{r['mb_per_s']:>8.3f} {r['us_per_kb']:>10.1f}  {note}"
        )
    ours = {(r["text"], r["size"]): r["seconds"] for r in rows if r["impl"] == "bidi_tts"}
    sizes = sorted({size for _, size in ours})
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        for kind in KINDS:
            scale = ours[(kind, large)] / ours[(kind, small)]
            factor = large // small
            print(f"bidi_tts {kind}: {factor}x the input took {scale:.1f}x the time (linear = {factor}x)")


def main() -> None:
    """Print the throughput table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 KB and 100 KB instead of 100 KB and 1 MB")
    parser.add_argument("--fragment", type=int, default=8, help="characters per feed (default 8)")
    args = parser.parse_args()
    sizes = (10_000, 100_000) if args.quick else (100_000, 1_000_000)
    passed, failed = score(split_sentences)
    print(f"golden rules: {passed}/{len(GOLDEN)} sentence-boundary rules pass"
          + (f" (failing: {', '.join(failed)})" if failed else ""))
    _print_table(run(sizes=sizes, fragment=args.fragment))


if __name__ == "__main__":
    main()
