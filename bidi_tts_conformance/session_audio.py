"""The PCM each session of a case received, kept so that a case page can play it and draw it.

Recorded at the transport seam next to the frame trace (:class:`bidi_tts_conformance.trace.FrameTrace`):
every received frame that is audio by the protocol's rule (TTS-CLASSIFY) is kept with its arrival
time, and each ``synthesis_start`` marks where a message begins and at what sample rate. Bounded:
at most :data:`MAX_AUDIO_BYTES` per case (about 40 s at 24 kHz); later audio is counted only.
"""

from __future__ import annotations

import base64
import io
import wave
from dataclasses import dataclass, field

from bidi_tts.frames import FrameKind, decode_control_frame

MAX_AUDIO_BYTES = 2_000_000
DEFAULT_RATE = 24_000


@dataclass
class SessionPcm:
    """One session's received audio: (arrival ms since the case began, PCM bytes) per frame."""

    sample_rate: int = DEFAULT_RATE
    frames: list[tuple[float, bytes]] = field(default_factory=list)
    message_starts: list[int] = field(default_factory=list)  # index into frames where a message begins
    dropped_bytes: int = 0

    @property
    def pcm(self) -> bytes:
        return b"".join(data for _, data in self.frames)

    def wav(self) -> bytes:
        """The PCM as a WAV file (mono s16le), an odd trailing byte left out."""
        pcm = self.pcm
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(self.sample_rate)
            w.writeframes(pcm[: len(pcm) - len(pcm) % 2])
        return buf.getvalue()

    def wav_data_uri(self) -> str:
        return "data:audio/wav;base64," + base64.b64encode(self.wav()).decode("ascii")

    def underruns(self) -> list[tuple[float, float]]:
        """(audio time s, dry ms) where a player starting at each message's first frame runs dry.

        The same rule as the load test's (bidi_tts.metrics.playback_underruns): playback starts when a
        message's first frame arrives and runs in real time; a frame arriving after the buffer ran dry
        is an underrun, at the point of the audio where it happened.
        """
        out: list[tuple[float, float]] = []
        starts = set(self.message_starts) or {0}
        audio_s = 0.0
        play_end_ms: float | None = None
        for i, (at_ms, data) in enumerate(self.frames):
            length_ms = len(data) / (2 * self.sample_rate) * 1000
            if i in starts:
                play_end_ms = None
            if play_end_ms is not None and at_ms > play_end_ms:
                out.append((audio_s, at_ms - play_end_ms))
            begin = at_ms if play_end_ms is None or at_ms > play_end_ms else play_end_ms
            play_end_ms = begin + length_ms
            audio_s += length_ms / 1000
        return out

    def message_offsets_s(self) -> list[float]:
        """Audio time (s) where each message begins."""
        out, audio_s = [], 0.0
        starts = set(self.message_starts)
        for i, (_, data) in enumerate(self.frames):
            if i in starts:
                out.append(audio_s)
            audio_s += len(data) / (2 * self.sample_rate)
        return out


class SessionAudio:
    """Every session's audio for one case."""

    def __init__(self, limit_bytes: int = MAX_AUDIO_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self.kept_bytes = 0
        self.sessions: dict[str, SessionPcm] = {}
        self._new_message: set[str] = set()

    def received(self, session: str, payload: bytes | str, kind: FrameKind | None, at_ms: float) -> None:
        if kind is FrameKind.TEXT or isinstance(payload, str) or kind is None:
            control = decode_control_frame(payload)
            if control is not None or kind is FrameKind.TEXT or isinstance(payload, str):
                self._control(session, control)
                return
        data = payload if isinstance(payload, bytes) else payload.encode("utf-8", "surrogatepass")
        pcm = self.sessions.setdefault(session, SessionPcm())
        if self.kept_bytes + len(data) > self.limit_bytes:
            pcm.dropped_bytes += len(data)
            return
        if session in self._new_message or not pcm.frames:
            pcm.message_starts.append(len(pcm.frames))
            self._new_message.discard(session)
        pcm.frames.append((at_ms, bytes(data)))
        self.kept_bytes += len(data)

    def _control(self, session: str, control: dict | None) -> None:
        if control is None or control.get("type") != "synthesis_start":
            return
        pcm = self.sessions.setdefault(session, SessionPcm())
        rate = control.get("sample_rate")
        if isinstance(rate, int) and rate > 0:
            pcm.sample_rate = rate
        self._new_message.add(session)

    def with_audio(self) -> dict[str, SessionPcm]:
        return {name: pcm for name, pcm in self.sessions.items() if pcm.frames}
