"""The kokoro-sample dialect: CONTRACT.md's own protocol, so the translator changes nothing."""

from __future__ import annotations

from bidi_tts.dialects.base import Dialect, Translator, WireMessage
from bidi_tts.frames import Frame, FrameKind
from bidi_tts.protocol import WS_PATH


class IdentityTranslator(Translator):
    def __init__(self) -> None:
        self.findings = []

    def outgoing(self, payload: bytes | str, kind: FrameKind | None) -> list[WireMessage]:
        return [WireMessage(payload, kind, carries_text=True)]

    def incoming(self, frame: Frame) -> list[Frame]:
        return [frame]


class KokoroSampleDialect(Dialect):
    name = "kokoro-sample"
    ws_path = WS_PATH
    invocation_path = None
    summary = "the AWS Kokoro sample's protocol ({\"text\"} in; synthesis_start, PCM, synthesis_complete out)"

    def translator(self) -> Translator:
        return IdentityTranslator()

    @property
    def is_identity(self) -> bool:
        return True
