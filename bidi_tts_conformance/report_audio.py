"""A case page's audio: a player for the PCM each session received, and its waveform with every
message start and every underrun marked (inline SVG, no script)."""

from __future__ import annotations

import html
import sys
from array import array

from bidi_tts_conformance.session_audio import SessionAudio, SessionPcm

WIDTH, HEIGHT = 1000, 100  # SVG user units; the element stretches to the page width


def envelope(pcm: bytes, columns: int = WIDTH) -> list[tuple[int, int]]:
    """(min, max) sample of each of `columns` equal slices of s16le PCM."""
    samples = array("h")
    samples.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    if sys.byteorder == "big":
        samples.byteswap()
    n = len(samples)
    if not n:
        return []
    out = []
    for c in range(min(columns, n)):
        lo, hi = c * n // min(columns, n), (c + 1) * n // min(columns, n)
        part = samples[lo:max(hi, lo + 1)]
        out.append((min(part), max(part)))
    return out


def waveform_svg(pcm: SessionPcm) -> str:
    """The waveform, blue dashed lines where a message begins, red lines where the player ran dry."""
    env = envelope(pcm.pcm)
    total_s = len(pcm.pcm) / (2 * pcm.sample_rate)
    if not env or total_s <= 0:
        return ""
    mid, scale = HEIGHT / 2, (HEIGHT / 2 - 2) / 32768
    step = WIDTH / len(env)
    path = "".join(f"M{i * step:.1f} {mid - hi * scale:.1f}V{mid - lo * scale + 0.5:.1f}"
                   for i, (lo, hi) in enumerate(env))
    marks = []
    for at in pcm.message_offsets_s()[1:]:
        x = at / total_s * WIDTH
        marks.append(f"<line class=msg x1='{x:.1f}' x2='{x:.1f}' y1='0' y2='{HEIGHT}' stroke='#0b4f9c' "
                     f"stroke-dasharray='4 3'><title>next message at {at:.2f} s</title></line>")
    for at, dry_ms in pcm.underruns():
        x = at / total_s * WIDTH
        marks.append(f"<line class=underrun x1='{x:.1f}' x2='{x:.1f}' y1='0' y2='{HEIGHT}' stroke='#d00' "
                     f"stroke-width='2'><title>underrun at {at:.2f} s of audio: the player ran dry for "
                     f"{dry_ms:.0f} ms</title></line>")
    return (f"<svg class=wave viewBox='0 0 {WIDTH} {HEIGHT}' preserveAspectRatio='none' role=img "
            f"aria-label='waveform, {total_s:.2f} s'><line x1='0' x2='{WIDTH}' y1='{mid}' y2='{mid}' "
            f"stroke='#ccc'/><path d='{path}' stroke='#2a7a2a' stroke-width='1' fill='none' "
            f"vector-effect='non-scaling-stroke'/>{''.join(marks)}</svg>")


def audio_section(audio: SessionAudio | None) -> str:
    """The 'Audio received' part of a case page ('' when no session received audio)."""
    sessions = audio.with_audio() if audio is not None else {}
    if not sessions:
        return ""
    parts = ["<h2>Audio received</h2><p class=legend>What each session received, as a player starting at each "
             "message's first audio frame would play it. Waveform: <span style='color:#0b4f9c'>dashed blue</span> "
             "where a message begins, <span style='color:#d00'>red</span> where the player ran dry (an underrun; "
             "hover for how long).</p>"]
    for name, pcm in sessions.items():
        seconds = len(pcm.pcm) / (2 * pcm.sample_rate)
        dry = pcm.underruns()
        dropped = f"; {pcm.dropped_bytes} more bytes not kept" if pcm.dropped_bytes else ""
        parts.append(
            f"<h3>{html.escape(name)}: {seconds:.2f} s at {pcm.sample_rate} Hz, {len(pcm.frames)} frames, "
            f"{len(pcm.message_starts)} messages, {len(dry)} underruns{dropped}</h3>"
            f"<audio controls preload=metadata data-session='{html.escape(name)}' src='{pcm.wav_data_uri()}'></audio>"
            + waveform_svg(pcm))
    return "\n".join(parts)
