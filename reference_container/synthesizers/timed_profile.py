"""Timing profiles of the timed synthesizer: what one model call costs and how much audio it makes.

A profile is a small JSON object (shipped ones live in ``reference_container/profiles/NAME.json``;
any other is given by path). Every cost is wall time on the device it was measured on:

- ``tokens_per_char``: phoneme tokens per character of English text (an estimator calibrated
  against misaki's G2P; the timed backend does not import misaki, so it starts in a second);
- ``g2p_fixed_ms``, ``g2p_per_char_ms``: the G2P's cost per unit (text to phonemes);
- ``call_fixed_ms``, ``call_per_token_ms``: one model call of n tokens takes fixed + per_token * n;
- ``call_ms_by_tokens`` (optional): ``[[tokens, ms], ...]``, a model call's cost by length, linear
  between the points and along the end segments beyond them; when given it replaces the straight
  line above (a CPU's cost per token is not constant: short calls cost more per token);
- ``audio_s_per_token``, ``audio_s_per_call``: seconds of audio per token, and per model call (the
  pauses Kokoro puts at the ends of what it speaks), at speed 1;
- ``audio_s_by_tokens`` (optional): ``[[tokens, s], ...]``, audio of one model call by length at
  speed 1, piecewise linear like ``call_ms_by_tokens``; replaces the two fields above (short units
  speak slower per token);
- ``unit_onset_s`` (optional, default 0): the near-silence the model speaks before every unit
  (Kokoro: about 0.3 s). The container trims it from a message's first unit only
  (:mod:`reference_container.onset`), so the audio fields above are a *first* unit's (what a
  one-sentence calibration message measures) and every later unit of a message speaks this much
  longer; the timed backend emits it as silence before each unit's tone, and the container's own
  trim takes it off first units;
- ``call_cv`` (optional, default 0): the spread of a call's cost around the model, as a coefficient
  of variation: each call's cost is drawn from a log-normal of mean 1 and this spread (a real
  container's calls scatter by text and by run; with identical costs, queues at high utilisation
  come out shorter than real ones: waiting grows with the variance of the service time);
- ``max_tokens_per_call``: a unit longer than this is split into several calls (Kokoro: 510);
- ``throughput_by_concurrency``: {k: device throughput with k calls running at once, relative to
  one}: each of k concurrent calls advances at throughput(k) / k of its solo speed; linear between
  the given k, held flat beyond the last;
- ``batch_shared_fraction``: a batched forward pass of k units of n_1..n_k tokens costs
  ``s * call(max n_i) + (1 - s) * sum(call(n_i))``: the share s is paid once per batch, padded to
  the longest unit, the rest per unit at its own length;
- ``batch_pass_fixed_ms``, ``batch_pass_ms_per_padded_audio_s`` (optional): the whole-model batched
  forward (:mod:`.kokoro_batched`, every tensor batched and padded to the longest unit): a pass of B
  units whose longest makes A seconds of audio costs fixed + per_padded_audio_s * B * A. When given,
  they replace ``batch_shared_fraction``'s model, so padding costs what it cost on the device;
- ``g2p_on_device``: true when the G2P competes with the model for the same processor (the CPU
  container: onnxruntime and the G2P share the cores), so it counts as device work;
- ``name``, ``description``, ``source``: what it is and where its numbers come from.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

PROFILE_SUFFIX = ".json"
_NUMBERS = ("tokens_per_char", "g2p_fixed_ms", "g2p_per_char_ms", "call_fixed_ms", "call_per_token_ms",
            "audio_s_per_token")


class ProfileError(Exception):
    """A profile that cannot be used; the message is one line for people."""


@dataclass(frozen=True, slots=True)
class Profile:
    """The cost model of one device and model; see the module docstring for the fields."""

    name: str
    tokens_per_char: float
    g2p_fixed_ms: float
    g2p_per_char_ms: float
    call_fixed_ms: float
    call_per_token_ms: float
    audio_s_per_token: float
    max_tokens_per_call: int = 510
    audio_s_per_call: float = 0.0
    throughput_by_concurrency: dict[int, float] = field(default_factory=lambda: {1: 1.0})
    batch_shared_fraction: float = 0.0
    g2p_on_device: bool = False
    call_cv: float = 0.0
    unit_onset_s: float = 0.0
    batch_pass_fixed_ms: float = 0.0
    batch_pass_ms_per_padded_audio_s: float = 0.0
    call_ms_by_tokens: tuple[tuple[float, float], ...] = ()
    audio_s_by_tokens: tuple[tuple[float, float], ...] = ()
    description: str = ""
    source: str = ""

    def tokens(self, text: str) -> int:
        """Estimated phoneme tokens of `text` (at least 1)."""
        return max(1, round(len(text.strip()) * self.tokens_per_char))

    def g2p_s(self, text: str) -> float:
        return (self.g2p_fixed_ms + self.g2p_per_char_ms * len(text)) / 1000

    def call_s(self, tokens: int) -> float:
        """Seconds of one model call of `tokens` tokens, alone on the device."""
        if self.call_ms_by_tokens:
            return max(0.0, piecewise(self.call_ms_by_tokens, tokens)) / 1000
        return (self.call_fixed_ms + self.call_per_token_ms * tokens) / 1000

    def batch_s(self, tokens: list[int]) -> float:
        """Seconds of one batched forward pass over units of these token counts: the shared part
        once, padded to the longest unit; the rest per unit at its own length (``torch_batch``
        runs the F0/noise predictor and the decoder per item on exactly that item's frames)."""
        if self.batch_pass_ms_per_padded_audio_s > 0:
            padded = len(tokens) * self.audio_s(max(tokens), 1.0)
            return (self.batch_pass_fixed_ms + self.batch_pass_ms_per_padded_audio_s * padded) / 1000
        s = self.batch_shared_fraction
        return s * self.call_s(max(tokens)) + (1 - s) * sum(self.call_s(n) for n in tokens)

    def audio_s(self, tokens: int, speed: float) -> float:
        """Seconds of audio of one model call of `tokens` tokens."""
        if self.audio_s_by_tokens:
            return max(0.0, piecewise(self.audio_s_by_tokens, tokens)) / max(speed, 1e-3)
        return (self.audio_s_per_call + tokens * self.audio_s_per_token) / max(speed, 1e-3)

    def split_tokens(self, tokens: int) -> list[int]:
        """Token counts of the model calls of one unit (each at most `max_tokens_per_call`)."""
        calls = math.ceil(tokens / self.max_tokens_per_call)
        base, extra = divmod(tokens, calls)
        return [base + (1 if i < extra else 0) for i in range(calls)]

    def throughput(self, k: int) -> float:
        """Device throughput with `k` calls running at once, relative to one call alone."""
        points = sorted(self.throughput_by_concurrency.items())
        if k <= points[0][0]:
            return points[0][1]
        for (k0, t0), (k1, t1) in itertools.pairwise(points):
            if k <= k1:
                return t0 + (t1 - t0) * (k - k0) / (k1 - k0)
        return points[-1][1]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "source": self.source,
                **{k: getattr(self, k) for k in _NUMBERS},
                "max_tokens_per_call": self.max_tokens_per_call, "audio_s_per_call": self.audio_s_per_call,
                "throughput_by_concurrency": {str(k): v for k, v in sorted(self.throughput_by_concurrency.items())},
                "batch_shared_fraction": self.batch_shared_fraction, "g2p_on_device": self.g2p_on_device,
                "call_cv": self.call_cv, "unit_onset_s": self.unit_onset_s,
                **({"batch_pass_fixed_ms": self.batch_pass_fixed_ms,
                    "batch_pass_ms_per_padded_audio_s": self.batch_pass_ms_per_padded_audio_s}
                   if self.batch_pass_ms_per_padded_audio_s > 0 else {}),
                **({"call_ms_by_tokens": [list(p) for p in self.call_ms_by_tokens]} if self.call_ms_by_tokens else {}),
                **({"audio_s_by_tokens": [list(p) for p in self.audio_s_by_tokens]} if self.audio_s_by_tokens else {})}


def piecewise(points: tuple[tuple[float, float], ...], x: float) -> float:
    """The polyline through `points` (sorted by x) at `x`; beyond the ends, the end segments go on."""
    if len(points) == 1:
        return points[0][1]
    i = 1
    while i < len(points) - 1 and x > points[i][0]:
        i += 1
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _points(data: dict[str, Any], key: str, where: str) -> tuple[tuple[float, float], ...]:
    """An optional ``[[x, y], ...]`` table: x strictly increasing and positive, y non-negative."""
    raw = data.get(key)
    if raw is None:
        return ()
    try:
        points = tuple((float(x), float(y)) for x, y in raw)
    except (TypeError, ValueError):
        raise ProfileError(f"profile {where}: {key!r} must be a list of [tokens, value] pairs") from None
    if not points or any(not (math.isfinite(x) and math.isfinite(y)) or x <= 0 or y < 0 for x, y in points):
        raise ProfileError(f"profile {where}: {key!r} needs positive token counts and non-negative values")
    if any(b[0] <= a[0] for a, b in itertools.pairwise(points)):
        raise ProfileError(f"profile {where}: {key!r} token counts must increase")
    return points


def shipped_profiles() -> list[str]:
    """Names of the profiles shipped in the package."""
    folder = resources.files("reference_container") / "profiles"
    return sorted(p.name[: -len(PROFILE_SUFFIX)] for p in folder.iterdir() if p.name.endswith(PROFILE_SUFFIX))


def _number(data: dict[str, Any], key: str, where: str, *, positive: bool = False) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ProfileError(f"profile {where}: {key!r} must be a number")
    if value < 0 or (positive and value == 0):
        raise ProfileError(f"profile {where}: {key!r} must be {'positive' if positive else 'non-negative'}")
    return float(value)


def parse_profile(data: object, where: str) -> Profile:
    """A Profile from decoded JSON; ProfileError naming the first bad field."""
    if not isinstance(data, dict):
        raise ProfileError(f"profile {where}: expected a JSON object")
    missing = [k for k in _NUMBERS if k not in data]
    if missing:
        raise ProfileError(f"profile {where}: missing {', '.join(missing)}")
    numbers = {k: _number(data, k, where, positive=k in ("tokens_per_char", "audio_s_per_token")) for k in _NUMBERS}
    max_tokens = data.get("max_tokens_per_call", 510)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ProfileError(f"profile {where}: 'max_tokens_per_call' must be a positive integer")
    raw = data.get("throughput_by_concurrency", {"1": 1.0})
    try:
        curve = {int(k): float(v) for k, v in dict(raw).items()}
    except (TypeError, ValueError):
        raise ProfileError(f"profile {where}: 'throughput_by_concurrency' must map integers to numbers") from None
    if not curve or any(k < 1 or not (v > 0 and math.isfinite(v)) for k, v in curve.items()):
        raise ProfileError(f"profile {where}: 'throughput_by_concurrency' needs k >= 1 and positive throughputs")
    shared = data.get("batch_shared_fraction", 0.0)
    if isinstance(shared, bool) or not isinstance(shared, (int, float)) or not 0 <= shared <= 1:
        raise ProfileError(f"profile {where}: 'batch_shared_fraction' must be a number from 0 to 1")
    per_call = _number(data, "audio_s_per_call", where) if "audio_s_per_call" in data else 0.0
    call_cv = _number(data, "call_cv", where) if "call_cv" in data else 0.0
    if call_cv > 2:
        raise ProfileError(f"profile {where}: 'call_cv' must be from 0 to 2")
    onset = _number(data, "unit_onset_s", where) if "unit_onset_s" in data else 0.0
    if onset > 5:
        raise ProfileError(f"profile {where}: 'unit_onset_s' must be from 0 to 5 seconds")
    pass_fixed = _number(data, "batch_pass_fixed_ms", where) if "batch_pass_fixed_ms" in data else 0.0
    pass_per_audio = (_number(data, "batch_pass_ms_per_padded_audio_s", where)
                      if "batch_pass_ms_per_padded_audio_s" in data else 0.0)
    name = data.get("name", Path(where).stem)
    return Profile(batch_pass_fixed_ms=pass_fixed, batch_pass_ms_per_padded_audio_s=pass_per_audio,
                   name=str(name), **numbers, max_tokens_per_call=max_tokens, audio_s_per_call=per_call,
                   throughput_by_concurrency=curve, call_cv=call_cv, unit_onset_s=onset,
                   call_ms_by_tokens=_points(data, "call_ms_by_tokens", where),
                   audio_s_by_tokens=_points(data, "audio_s_by_tokens", where),
                   batch_shared_fraction=float(shared), g2p_on_device=bool(data.get("g2p_on_device", False)),
                   description=str(data.get("description", "")), source=str(data.get("source", "")))


def load_profile(spec: str) -> Profile:
    """A shipped profile by name, or a profile file by path; ProfileError (one line) when it cannot be."""
    looks_like_path = "/" in spec or spec.endswith(PROFILE_SUFFIX)
    if looks_like_path:
        path = Path(spec).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ProfileError(f"profile file {str(path)!r} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ProfileError(f"profile file {str(path)!r} cannot be read ({type(exc).__name__})") from None
        where = str(path)
    else:
        if spec not in shipped_profiles():
            raise ProfileError(f"unknown timed profile {spec!r}: shipped ones are {', '.join(shipped_profiles())} "
                               "(or give a path to a .json file)")
        text = (resources.files("reference_container") / "profiles" / f"{spec}{PROFILE_SUFFIX}").read_text("utf-8")
        where = spec
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"profile {where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return parse_profile(data, where)


def closed_loop(profile: Profile, threads: int, texts: list[str], units: int = 400) -> tuple[float, float]:
    """(units per second, audio seconds per second) of `threads` threads each synthesizing `texts`
    back to back (thread i starts at text i), in virtual time under the profile's model: G2P, then
    the model calls, the calls (and the G2P when ``g2p_on_device``) sharing the device by the
    throughput curve. The shape of ``bench/gpu_bench.py``'s concurrency step (no batching), so a
    profile's curve can be checked against, or fitted to, such a measurement. Thread starts are
    staggered over one unit's solo time (real threads drift apart; in lock-step none would ever
    overlap another's G2P)."""
    phases: list[list[tuple[bool, float, float]]] = []  # per text: (on device, solo seconds, audio s)
    for sentence in texts:
        g2p = [(profile.g2p_on_device, profile.g2p_s(sentence), 0.0)]
        calls = [(True, profile.call_s(n), profile.audio_s(n, 1.0))
                 for n in profile.split_tokens(profile.tokens(sentence))]
        phases.append(g2p + calls)
    solo = sum(x[1] for x in phases[0])
    # Per thread: text index, phase index (-1: the staggered start), seconds of work left in the phase.
    text = [i % len(texts) for i in range(threads)]
    phase = [-1] * threads
    left = [solo * i / threads for i in range(threads)]
    now, done, audio = 0.0, 0, 0.0
    while done < units:
        device = [ph >= 0 and phases[t][ph][0] for t, ph in zip(text, phase, strict=True)]
        k = sum(device)
        device_rate = profile.throughput(k) / k if k else 0.0
        rates = [device_rate if d else 1.0 for d in device]
        step = min(w / rate for w, rate in zip(left, rates, strict=True))
        now += step
        for i in range(threads):
            left[i] -= step * rates[i]
            if left[i] > 1e-12:
                continue
            t, ph = text[i], phase[i]
            if ph >= 0:
                audio += phases[t][ph][2]
            if ph + 1 < len(phases[t]):
                phase[i] = ph + 1
            else:
                done += ph >= 0
                text[i], phase[i] = ((t + 1) % len(texts) if ph >= 0 else t), 0
            left[i] = phases[text[i]][phase[i]][1]
    return done / now, audio / now
