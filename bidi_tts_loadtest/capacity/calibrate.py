"""Fit a timed-backend profile to a running container: one session, a spread of sentence lengths.

    uv run python -m loadtest.capacity calibrate --container-url http://127.0.0.1:8080 --out my.json

Each message is sent alone and waited for, so nothing queues. Its first audio leaves when its first
unit is synthesized (units: sentences, the first cut at a clause when the container does that; the
reference container's plan is replayed with :mod:`bidi_tts.chunker`), so per message

- time to first audio = fixed + per_char * chars(first unit)   (+ one frame's transfer)
- audio seconds       = audio_per_char * chars   (one rate over all the texts)
                        + unit_onset * (units - 1)

Least squares over the median of each text's repeats gives the numbers (a round slowed by other
tenants of the machine moves nothing). Besides the straight lines above, forms by length compete: a
polyline (knots at the thirds of the lengths seen: on a CPU a short unit costs more per character
than a long one) and, for the audio, a constant per unit plus a rate (Kokoro pads every unit with
silence; the container trims the first unit's). The *unit onset* is that silence where it is not
trimmed: a message of several sentences against the same sentences sent alone speaks this much more
per later unit (the reference container trims only a message's first unit); it is measured first
and taken off the several-sentence messages before the audio forms are fitted. Each form is judged
by its leave-one-text-out error (one text left out in turn, predicted from the rest); the profile
takes the best (``call_ms_by_tokens``, ``audio_s_by_tokens``) only where it predicts the left-out
texts better than the line. The completion time is not used: it also holds the transfer of the last
unit's audio, which grows with the audio and would pass for model cost.
Start the reference container with ``--first-clause-chars 0`` for a calibration (else every first
unit is 40 characters or less and the lengths do not spread); give ``--first-clause-chars N`` here
when the container cuts. The profile states the fit per phoneme token through ``tokens_per_char``
(misaki's English G2P makes about 1.07 tokens per character of the load test's corpus), so fixed cost
and per-token cost read as Kokoro's. From outside, the G2P and the model call are one cost: the fit
puts both in the call (``g2p_*`` are 0). The rms relative error of the cost fit becomes the
profile's ``call_cv``: the real costs scatter around any form by that much, and the timed backend
draws its costs with the same spread. One session cannot see how concurrent calls share the
device: ``throughput_by_concurrency`` stays {1: 1.0}.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bidi_tts.chunker import first_clause_split, split_sentences
from bidi_tts.deadline import Deadline
from bidi_tts.protocol import DEFAULT_SAMPLE_RATE, SynthesizeRequest
from bidi_tts.session import ClientSession
from bidi_tts.transports.base import TransportTimeout
from bidi_tts.transports.websocket_sync import SyncWebSocketTransport
from bidi_tts_loadtest.core.corpus import load_answers

# misaki 0.9.4 (en-US) phoneme tokens per character over the sentences of bidi_tts_loadtest/answers.txt
MISAKI_TOKENS_PER_CHAR = 1.07
BYTES_PER_S = 2 * DEFAULT_SAMPLE_RATE


def calibration_texts(count: int = 10) -> list[str]:
    """Sentences of the load test's corpus at evenly spaced lengths, and two messages of several
    sentences. Only real sentences: plain word lists speak without the pauses of punctuation and
    pulled the fitted audio per character down (and the per-unit audio up)."""
    sentences = sorted({s for answer in load_answers() for s in split_sentences(answer)}, key=lambda s: (len(s), s))
    picks = [sentences[round(i * (len(sentences) - 1) / (count - 1))] for i in range(count)]
    return [*picks, f"{picks[1]} {picks[5]} {picks[8]}", f"{picks[3]} {picks[6]} {picks[2]} {picks[9]}"]


def plan_units(text: str, first_clause_chars: int = 0) -> list[str]:
    """The reference container's units of one message (:mod:`reference_container.segments`)."""
    sentences = [s for s in (split_sentences(text) or [text]) if s.strip()]
    if sentences and first_clause_chars > 0 and (split := first_clause_split(sentences[0], first_clause_chars)):
        return [*split, *sentences[1:]]
    return sentences


@dataclass(slots=True)
class Observation:
    units: list[int]  # characters per unit
    ttfa_s: float
    audio_s: float


Points = list[tuple[float, float]]  # (characters, value): a polyline by length


@dataclass(slots=True)
class Fit:
    fixed_s: float
    per_char_s: float
    audio_s_per_char: float
    audio_fixed_s: float
    latency_error: float  # root-mean-square relative error of the straight line's predicted times
    audio_error: float
    latency_by_chars: Points = field(default_factory=list)  # the polyline, when it predicts better
    audio_by_chars: Points = field(default_factory=list)
    # Leave-one-text-out rms relative errors: {"latency": {"line": e, "by length": e}, "audio": {...}}
    holdout: dict[str, dict[str, float]] = field(default_factory=dict)
    band_errors: dict[str, float] = field(default_factory=dict)  # in-sample, of the polylines
    # Seconds a later unit of a message speaks more than alone (its untrimmed leading silence);
    # None when no message of several sentences could be set against its sentences alone.
    unit_onset_s: float | None = None

    def profile(self, name: str, source: str, tokens_per_char: float = MISAKI_TOKENS_PER_CHAR) -> dict[str, Any]:
        """A timed-backend profile (JSON-ready) from this fit."""
        profile: dict[str, Any] = {
            "name": name,
            "description": "fitted by `python -m loadtest.capacity calibrate` at one session",
            "source": source,
            "tokens_per_char": tokens_per_char,
            "g2p_fixed_ms": 0.0,
            "g2p_per_char_ms": 0.0,
            "call_fixed_ms": round(1000 * self.fixed_s, 3),
            "call_per_token_ms": round(1000 * self.per_char_s / tokens_per_char, 4),
            "audio_s_per_token": round(self.audio_s_per_char / tokens_per_char, 5),
            "max_tokens_per_call": 510,
            "audio_s_per_call": round(max(self.audio_fixed_s, 0.0), 4),
            "throughput_by_concurrency": {"1": 1.0},
            "batch_shared_fraction": 0.0,
            "g2p_on_device": False,
            # The measured costs' spread around the fitted form: the timed backend draws each call's
            # cost with this spread, so its queues see the variance the real container's do.
            "call_cv": round(self.band_errors["latency"] if self.latency_by_chars else self.latency_error, 3),
            "unit_onset_s": round(max(self.unit_onset_s or 0.0, 0.0), 4),
            "fit": {"latency_rms_rel_error": round(self.latency_error, 4),
                    "audio_rms_rel_error": round(self.audio_error, 4),
                    **{f"{k}_rms_rel_error_by_length": round(v, 4) for k, v in self.band_errors.items()},
                    "leave_one_text_out": {k: {m: round(e, 4) for m, e in v.items()} for k, v in self.holdout.items()}},
        }
        if self.latency_by_chars:
            profile["call_ms_by_tokens"] = [[round(c * tokens_per_char, 1), round(1000 * y, 2)]
                                            for c, y in self.latency_by_chars]
        if self.audio_by_chars:
            profile["audio_s_by_tokens"] = [[round(c * tokens_per_char, 1), round(y, 4)]
                                            for c, y in self.audio_by_chars]
        return profile


def _lstsq2(rows: list[tuple[float, float]], ys: list[float]) -> tuple[float, float]:
    """Least squares for y = a*x0 + b*x1 (normal equations; two unknowns)."""
    s00 = sum(r[0] * r[0] for r in rows)
    s01 = sum(r[0] * r[1] for r in rows)
    s11 = sum(r[1] * r[1] for r in rows)
    t0 = sum(r[0] * y for r, y in zip(rows, ys, strict=True))
    t1 = sum(r[1] * y for r, y in zip(rows, ys, strict=True))
    det = s00 * s11 - s01 * s01
    if abs(det) < 1e-12:
        raise ValueError("calibration texts do not spread enough to fit")
    return (t0 * s11 - t1 * s01) / det, (s00 * t1 - s01 * t0) / det


def _rms_rel(pred: list[float], meas: list[float]) -> float:
    pairs = [(p, m) for p, m in zip(pred, meas, strict=True) if m > 0]
    return math.sqrt(sum(((p - m) / m) ** 2 for p, m in pairs) / len(pairs)) if pairs else 0.0


# -- the two forms: y = sum over a message's units of g(chars), g a line or a polyline -----------------

MIN_LENGTHS_FOR_BANDS = 6  # distinct unit lengths needed before a polyline with two knots is fitted


def knots(lengths: list[int]) -> list[float]:
    """Two interior knots at the thirds of the distinct lengths; [] when too few to fit bands."""
    distinct = sorted(set(lengths))
    if len(distinct) < MIN_LENGTHS_FOR_BANDS:
        return []
    return [float(np.quantile(distinct, q)) for q in (1 / 3, 2 / 3)]


def _basis(units: list[int], at: list[float], *, intercept: bool) -> list[float]:
    """One message's row: sum over its units of [1, c, max(0, c - k) for each knot]."""
    row = [float(len(units))] if intercept else []
    row.append(float(sum(units)))
    row += [float(sum(max(0.0, c - k) for c in units)) for k in at]
    return row


def _solve(rows: list[list[float]], ys: list[float]) -> np.ndarray:
    a = np.asarray(rows, dtype=float)
    if np.linalg.matrix_rank(a) < a.shape[1]:
        raise ValueError("calibration texts do not spread enough to fit")
    coef, *_ = np.linalg.lstsq(a, np.asarray(ys, dtype=float), rcond=None)
    return coef


def _polyline(coef: np.ndarray, at: list[float], lo: float, hi: float, *, intercept: bool) -> Points:
    """The fitted g(c) at the ends of the lengths seen and at the knots."""
    def g(c: float) -> float:
        v = (coef[0] if intercept else 0.0) + coef[1 if intercept else 0] * c
        return float(v + sum(d * max(0.0, c - k) for d, k in zip(coef[2 if intercept else 1:], at, strict=True)))
    xs = sorted({lo, *at, hi})
    return [(x, max(g(x), 1e-4)) for x in xs]


def _holdout(groups: dict[tuple[int, ...], list[Observation]], value: Callable[[Observation], float],
             units_of: Callable[[Observation], list[int]], at: list[float], *, intercept: bool) -> float:
    """Leave-one-text-out rms relative error of the form with these knots ([]: the line)."""
    errors: list[float] = []
    for key in groups:
        train = [o for k, g in groups.items() if k != key for o in g]
        try:
            coef = _solve([_basis(units_of(o), at, intercept=intercept) for o in train], [value(o) for o in train])
        except ValueError:
            continue
        for o in groups[key]:
            pred = float(np.dot(_basis(units_of(o), at, intercept=intercept), coef))
            if value(o) > 0:
                errors.append(((pred - value(o)) / value(o)) ** 2)
    return math.sqrt(sum(errors) / len(errors)) if errors else math.inf


def per_text_medians(observations: list[Observation]) -> list[Observation]:
    """One observation per text: the median of its repeats. A round slowed by the machine's other
    tenants (on the 2-core machine one round ran 50% slower than the next two) then moves no fit."""
    groups: dict[tuple[int, ...], list[Observation]] = {}
    for o in observations:
        groups.setdefault(tuple(o.units), []).append(o)
    return [Observation(list(units), float(np.median([o.ttfa_s for o in g])), float(np.median([o.audio_s for o in g])))
            for units, g in groups.items()]


def unit_onset(observations: list[Observation]) -> float | None:
    """Seconds each later unit of a message speaks more than the same sentence alone: over the
    messages of several units whose every unit was also measured alone (as a one-unit message of
    that length), (audio - sum of the units' audio alone) / (units - 1), pooled. None without such a
    message. On medians (:func:`per_text_medians`)."""
    alone = {o.units[0]: o.audio_s for o in observations if len(o.units) == 1}
    extra, later = 0.0, 0
    for o in observations:
        if len(o.units) > 1 and all(c in alone for c in o.units):
            extra += o.audio_s - sum(alone[c] for c in o.units)
            later += len(o.units) - 1
    return extra / later if later else None


def fit(observations: list[Observation]) -> Fit:
    """Least-squares fit of the cost per unit and the audio per unit, as lines and by length (see
    the module doc), on the median of each text's repeats; the unit onset is measured first and
    taken off the messages of several units, so the audio forms describe a first unit."""
    observations = per_text_medians(observations)
    onset = unit_onset(observations)
    if onset is not None and onset > 0:
        observations = [Observation(o.units, o.ttfa_s, o.audio_s - onset * (len(o.units) - 1)) for o in observations]
    rows: list[tuple[float, float]] = []
    ys: list[float] = []
    for o in observations:
        rows.append((1.0, float(o.units[0])))
        ys.append(o.ttfa_s)
    fixed, per_char = _lstsq2(rows, ys)
    # Audio: one rate through the origin (seconds per character over all the texts); the forms by
    # length (a constant per unit plus a rate, or a polyline) compete with it in _fit_bands.
    chars = sum(sum(o.units) for o in observations)
    audio_per_char = sum(o.audio_s for o in observations) / chars if chars else 0.0
    if audio_per_char <= 0:
        raise ValueError("the container made no audio: cannot fit")
    pred = [fixed * r[0] + per_char * r[1] for r in rows]
    audio_pred = [audio_per_char * sum(o.units) for o in observations]
    result = Fit(max(fixed, 0.0), max(per_char, 0.0), audio_per_char, 0.0,
                 _rms_rel(pred, ys), _rms_rel(audio_pred, [o.audio_s for o in observations]), unit_onset_s=onset)
    _fit_bands(result, observations)
    return result


def _fit_bands(result: Fit, observations: list[Observation]) -> None:
    """The forms by length, kept where they predict left-out texts better than the lines: for the
    time, a polyline; for the audio, a constant per unit plus a rate, or a polyline."""
    groups = {tuple(o.units): [o] for o in observations}
    forms = {
        # latency: the first unit only; audio: every unit of the message
        "latency": (lambda o: o.ttfa_s, lambda o: o.units[:1]),
        "audio": (lambda o: o.audio_s, lambda o: o.units),
    }
    for key, (value, units_of) in forms.items():
        lengths = [c for o in observations for c in units_of(o)]
        at = knots(lengths)
        if not at or len(groups) < 2 * (len(at) + 2):
            continue
        # (knots, intercept) of each candidate; "line" is the profile's straight line
        candidates = {"line": ([], key == "latency"), "by length": (at, True)}
        if key == "audio":
            candidates["per unit"] = ([], True)
        errors = {name: _holdout(groups, value, units_of, k, intercept=i) for name, (k, i) in candidates.items()}
        result.holdout[key] = errors
        best = min(errors, key=lambda name: errors[name])
        for name in ("by length", "per unit") if key == "audio" else ("by length",):
            k, i = candidates[name]
            coef = _solve([_basis(units_of(o), k, intercept=i) for o in observations], [value(o) for o in observations])
            if name == "by length":
                preds = [float(np.dot(_basis(units_of(o), k, intercept=i), coef)) for o in observations]
                result.band_errors[key] = _rms_rel(preds, [value(o) for o in observations])
            if name == best:
                points = _polyline(coef, k, float(min(lengths)), float(max(lengths)), intercept=i)
                if key == "latency":
                    result.latency_by_chars = points
                else:
                    result.audio_by_chars = points


def measure(url: str, texts: list[str], repeats: int, *, first_clause_chars: int = 0, timeout_s: float = 60.0,
            progress: Callable[[str], None] = lambda _: None) -> list[Observation]:
    """Send each text alone, `repeats` times, over one session; TTFA, completion and audio of each."""
    transport = SyncWebSocketTransport.open(url)
    session = ClientSession()
    out: list[Observation] = []
    try:
        for r in range(repeats + 1):  # the first round warms the container up and is dropped
            for i, text in enumerate(texts):
                request = SynthesizeRequest(text=text, request_id=f"cal-{r}-{i}")
                payload = session.synthesize(request, at=time.perf_counter())
                record = session.records[request.request_id]
                record.sent_at = transport.send(payload)
                deadline = Deadline(timeout_s)
                while not record.done:
                    if deadline.expired:
                        raise TimeoutError(f"no answer to a calibration message within {timeout_s:.0f} s")
                    try:
                        frame = transport.receive(timeout=max(0.01, deadline.remaining()))
                    except TransportTimeout:
                        continue
                    session.receive_frame(frame)
                if record.error_code is not None:
                    raise RuntimeError(f"the container answered error {record.error_code!r}")
                if r == 0 or record.first_audio_at is None or record.completed_at is None:
                    continue
                out.append(Observation([len(u) for u in plan_units(text, first_clause_chars)],
                                       record.first_audio_at - record.sent_at, record.audio_bytes / BYTES_PER_S))
            if r:
                progress(f"round {r}/{repeats}: {len(out)} messages measured")
    finally:
        transport.close()
    return out


def run(url: str, out_path: Path, *, name: str, repeats: int, first_clause_chars: int,
        tokens_per_char: float, print_fn: Callable[[str], None] = print) -> int:
    """The `calibrate` command: measure, fit, print the fit's error, write the profile."""
    texts = calibration_texts()
    observations = measure(url, texts, repeats, first_clause_chars=first_clause_chars, progress=print_fn)
    source = (f"{url} at one session, {len(observations)} messages of {min(map(len, texts))}-"
              f"{max(map(len, texts))} characters, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    return _write(observations, out_path, name=name, source=source, tokens_per_char=tokens_per_char,
                  print_fn=print_fn)


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


def refit(in_path: Path, out_path: Path, *, name: str | None, tokens_per_char: float,
          print_fn: Callable[[str], None] = print) -> int:
    """`calibrate --refit PROFILE`: fit again from a profile's kept observations, measuring nothing."""
    observations, data = load_observations(in_path)
    source = f"refitted from the observations of {in_path.name} ({data.get('source', '')})"
    return _write(observations, out_path, name=name or str(data.get("name", out_path.stem)), source=source,
                  tokens_per_char=tokens_per_char, print_fn=print_fn, description=data.get("description"))


def _write(observations: list[Observation], out_path: Path, *, name: str, source: str, tokens_per_char: float,
           print_fn: Callable[[str], None], description: str | None = None) -> int:
    result = fit(observations)
    profile = result.profile(name, source, tokens_per_char)
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
