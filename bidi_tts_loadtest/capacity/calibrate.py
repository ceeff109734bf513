"""Fit a timed-backend profile to a running container: one session, a spread of sentence lengths.

    uv run python -m loadtest.capacity calibrate --container-url http://127.0.0.1:8080 --out my.json

Three steps, each a module of :mod:`bidi_tts_loadtest.capacity.calibration`: measure (each text sent
alone over one session), fit (least squares over the median of each text's repeats, lines against
forms by length, judged by leave-one-text-out error), and the profile file (written with its raw
observations, so ``--refit PROFILE`` fits again without measuring).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bidi_tts_loadtest.capacity.calibration.measure import calibration_texts, measure
from bidi_tts_loadtest.capacity.calibration.profile_file import load_observations, write_profile


def run(url: str, out_path: Path, *, name: str, repeats: int, first_clause_chars: int,
        tokens_per_char: float, print_fn: Callable[[str], None] = print) -> int:
    """The `calibrate` command: measure, fit, print the fit's error, write the profile."""
    texts = calibration_texts()
    observations = measure(url, texts, repeats, first_clause_chars=first_clause_chars, progress=print_fn)
    source = (f"{url} at one session, {len(observations)} messages of {min(map(len, texts))}-"
              f"{max(map(len, texts))} characters, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    return write_profile(observations, out_path, name=name, source=source, tokens_per_char=tokens_per_char,
                  print_fn=print_fn)


def refit(in_path: Path, out_path: Path, *, name: str | None, tokens_per_char: float,
          print_fn: Callable[[str], None] = print) -> int:
    """`calibrate --refit PROFILE`: fit again from a profile's kept observations, measuring nothing."""
    observations, data = load_observations(in_path)
    source = f"refitted from the observations of {in_path.name} ({data.get('source', '')})"
    return write_profile(observations, out_path, name=name or str(data.get("name", out_path.stem)), source=source,
                  tokens_per_char=tokens_per_char, print_fn=print_fn, description=data.get("description"))


