"""Toy containers that treat the voice field as trusted input (TTS-VOICE), each breaking it one way.

`PathVoiceToy` resolves the voice id as a file under its voices folder, as a container that builds
``os.path.join(VOICES_DIR, voice + ext)`` does: any path that lands on a voice file is that voice.
`PromptVoiceToy` checks only that the id starts with a voice it has, and puts the rest of the id into
its model's input, as a proxy that builds a prompt from the client's voice string does: the words the
id carries are spoken (espeak-ng speech, so that a recognizer can hear them).
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
from typing import Any

from bidi_tts import protocol
from tests.toys.good import ToyContainer
from tests.toys.speaking import SpeakingToy

VOICES_DIR = "voices"


def _decoded(data: bytes | str) -> dict[str, Any] | None:
    try:
        return protocol.decode_json_object(data)
    except protocol.ProtocolError:
        return None


class PathVoiceToy(ToyContainer):
    """The voice id joined to its voices folder and normalized: './af_heart', 'x/../af_heart' and
    '../voices/af_heart' all land on af_heart's file; 'zz_nobody' lands on none and is refused."""

    def resolve(self, voice: str) -> str | None:
        landed = posixpath.normpath(posixpath.join(VOICES_DIR, voice))
        folder, name = posixpath.split(landed)
        return name if folder == VOICES_DIR and name in self.config.voices else None

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        obj = _decoded(data)
        if obj is not None and isinstance(voice := obj.get("voice"), str) and (name := self.resolve(voice)):
            return super().parse(json.dumps({**obj, "voice": name}))
        return super().parse(data)


class PromptVoiceToy(SpeakingToy):
    """Takes any id that starts with a voice it has; what follows is read into the model's input ahead
    of the text, and spoken."""

    def split(self, voice: str) -> tuple[str, str] | None:
        for name in sorted(self.config.voices, key=len, reverse=True):
            if voice.startswith(name) and voice != name:
                return name, voice[len(name):].strip(" ,:;\n")
        return None

    def parse(self, data: bytes | str) -> protocol.ClientMessage:
        obj = _decoded(data)
        if obj is not None and isinstance(voice := obj.get("voice"), str) and (parts := self.split(voice)):
            message = super().parse(json.dumps({**obj, "voice": parts[0]}))
            if isinstance(message, protocol.SynthesizeRequest) and parts[1]:
                return dataclasses.replace(message, text=f"{parts[1].rstrip('.')}. {message.text}")
            return message
        return super().parse(data)
