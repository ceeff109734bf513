"""The profile file of a calibration: the timed backend's profile (JSON) from a fit, with the raw
observations kept so that a later model can be refitted without measuring again; and their reading.

The profile states the fit per phoneme token through ``tokens_per_char`` (misaki's English G2P makes
about 1.07 tokens per character of the load test's corpus), so fixed cost and per-token cost read as
Kokoro's. From outside, the G2P and the model call are one cost: the fit puts both in the call
(``g2p_*`` are 0). The rms relative error of the cost fit becomes the profile's ``call_cv``: the real
costs scatter around any form by that much, and the timed backend draws its costs with the same
spread. One session cannot see how concurrent calls share the device: ``throughput_by_concurrency``
stays {1: 1.0}.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bidi_tts_loadtest.capacity.calibration.fit import Fit, Observation, fit

# misaki 0.9.4 (en-US) phoneme tokens per character over the sentences of the load test's answers corpus
MISAKI_TOKENS_PER_CHAR = 1.07


def profile_of(result: Fit, name: str, source: str,
               tokens_per_char: float = MISAKI_TOKENS_PER_CHAR) -> dict[str, Any]:
    """A timed-backend profile (JSON-ready) from this result."""
    profile: dict[str, Any] = {
        "name": name,
        "description": "fitted by `python -m loadtest.capacity calibrate` at one session",
        "source": source,
        "tokens_per_char": tokens_per_char,
        "g2p_fixed_ms": 0.0,
        "g2p_per_char_ms": 0.0,
        "call_fixed_ms": round(1000 * result.fixed_s, 3),
        "call_per_token_ms": round(1000 * result.per_char_s / tokens_per_char, 4),
        "audio_s_per_token": round(result.audio_s_per_char / tokens_per_char, 5),
        "max_tokens_per_call": 510,
        "audio_s_per_call": round(max(result.audio_fixed_s, 0.0), 4),
        "throughput_by_concurrency": {"1": 1.0},
        "batch_shared_fraction": 0.0,
        "g2p_on_device": False,
        # The measured costs' spread around the fitted form: the timed backend draws each call's
        # cost with this spread, so its queues see the variance the real container's do.
        "call_cv": round(result.band_errors["latency"] if result.latency_by_chars else result.latency_error, 3),
        "unit_onset_s": round(max(result.unit_onset_s or 0.0, 0.0), 4),
        "fit": {"latency_rms_rel_error": round(result.latency_error, 4),
                "audio_rms_rel_error": round(result.audio_error, 4),
                **{f"{k}_rms_rel_error_by_length": round(v, 4) for k, v in result.band_errors.items()},
                "leave_one_text_out": {k: {m: round(e, 4) for m, e in v.items()} for k, v in result.holdout.items()}},
    }
    if result.latency_by_chars:
        profile["call_ms_by_tokens"] = [[round(c * tokens_per_char, 1), round(1000 * y, 2)]
                                        for c, y in result.latency_by_chars]
    if result.audio_by_chars:
        profile["audio_s_by_tokens"] = [[round(c * tokens_per_char, 1), round(y, 4)]
                                        for c, y in result.audio_by_chars]
    return profile


def load_observations(path: Path) -> tuple[list[Observation], dict[str, Any]]:
    """The raw observations a calibration kept in its profile (``fit.observations``), and the profile;
    ValueError (one line) when the file holds none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        raw = data["fit"]["observations"]
        observations = [Observation([int(c) for c in o["units"]], float(o["ttfa_s"]), float(o["audio_s"])) for o in raw]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} holds no calibration observations (fit.observations): {type(exc).__name__}") from None
    if not observations:
        raise ValueError(f"{path} holds no calibration observations (fit.observations is empty)")
    return observations, data


def write_profile(observations: list[Observation], out_path: Path, *, name: str, source: str, tokens_per_char: float,
           print_fn: Callable[[str], None], description: str | None = None) -> int:
    result = fit(observations)
    profile = profile_of(result, name, source, tokens_per_char)
    if description:
        profile["description"] = description
    # The raw measurements, so that a later model can be refitted without measuring again.
    profile["fit"]["observations"] = [{"units": o.units, "ttfa_s": round(o.ttfa_s, 4), "audio_s": round(o.audio_s, 4)}
                                      for o in observations]
    out_path.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
    print_fn(f"fit: unit cost = {1000 * result.fixed_s:.1f} ms + {1000 * result.per_char_s:.3f} ms/char "
             f"({profile['call_per_token_ms']} ms/token); audio = {result.audio_s_per_char:.4f} s/char "
             f"({profile['audio_s_per_token']} s/token)")
    if result.unit_onset_s is None:
        print_fn("unit onset: not measured (no message of several sentences beside its sentences alone): 0")
    else:
        print_fn(f"unit onset: a later unit of a message speaks {result.unit_onset_s:.3f} s more than alone "
                 f"(its leading silence, trimmed only from first units){'' if result.unit_onset_s > 0 else ': 0'}")
    print_fn(f"fit error (rms, relative): latency {100 * result.latency_error:.1f}%, "
             f"audio {100 * result.audio_error:.1f}%")
    for key, errors in result.holdout.items():
        chosen = result.latency_by_chars if key == "latency" else result.audio_by_chars
        unit = "ms" if key == "latency" else "s"
        table = ", ".join(f"{c:.0f} chars: {v * 1000:.0f}" if key == "latency" else f"{c:.0f} chars: {v:.2f}"
                          for c, v in chosen)
        best = min(errors, key=lambda name: errors[name])
        print_fn(f"{key} by length: fit error {100 * result.band_errors[key]:.1f}%; left-one-text-out error "
                 + ", ".join(f"{name} {100 * e:.1f}%" for name, e in errors.items())
                 + (f": the profile takes it {best} ({table} {unit})" if chosen else ": the profile keeps the line"))
    print_fn(f"wrote {out_path}")
    return 0
