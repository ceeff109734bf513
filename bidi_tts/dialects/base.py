"""The dialect seam: a dialect names its route and makes one Translator per session."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from bidi_tts.frames import Frame, FrameKind


class DialectUnsupported(Exception):
    """The conversation asked for something the dialect's wire cannot say (vLLM-Omni has no cancel)."""


@dataclass(frozen=True, slots=True)
class WireMessage:
    """One message to put on the wire, in the kind the caller asked for (the transport's business).
    `carries_text` marks the message that holds the spoken text: the one a fragmented send splits."""

    payload: bytes | str
    kind: FrameKind | None
    carries_text: bool = False


class Translator(ABC):
    """Per-session map between the kokoro-sample conversation and a dialect's wire.

    `outgoing` takes a kokoro-sample client message (as the caller would have sent it) and returns
    the wire messages; anything it does not recognise goes out unchanged. `incoming` takes one wire
    frame and returns the kokoro-sample frames it means (none, one or several); a frame it does not
    know comes back unchanged, so the session's own rules judge it.
    """

    #: Breaks of the dialect's own wire rules seen so far: (the TTS clause broken, what happened).
    findings: list[tuple[str, str]]

    @abstractmethod
    def outgoing(self, payload: bytes | str, kind: FrameKind | None) -> list[WireMessage]: ...

    @abstractmethod
    def incoming(self, frame: Frame) -> list[Frame]: ...


class Dialect(ABC):
    """A wire protocol: where its WebSocket route is and how to translate a session."""

    name: str
    ws_path: str  # the route on the container, with its leading slash
    invocation_path: str | None  # X-Amzn-SageMaker-Model-Invocation-Path over SageMaker (None: default route)
    summary: str

    @abstractmethod
    def translator(self) -> Translator: ...

    @property
    def is_identity(self) -> bool:
        return False
