"""The fit: unit cost and audio per unit from one-session observations, by least squares (numpy's).

Per message, its first audio leaves when its first unit is synthesized, so

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
takes the best only where it predicts the left-out texts better than the line. The completion time
is not used: it also holds the transfer of the last unit's audio, which grows with the audio and
would pass for model cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


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
    rows = [[1.0, float(o.units[0])] for o in observations]
    ys = [o.ttfa_s for o in observations]
    fixed, per_char = (float(v) for v in _solve(rows, ys))
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
