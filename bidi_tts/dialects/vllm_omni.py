"""The vllm-omni dialect: vLLM-Omni's streaming speech WebSocket (/v1/audio/speech/stream).

Its wire, as vllm_omni/entrypoints/openai/serving_speech_stream.py speaks it:
client ``session.config`` (required first; repeatable between utterances), ``input.text``,
``input.done`` (a flush: the connection stays open), ``session.close``; server ``audio.start``
(utterance_index, sentence_index, format; sample_rate and channels for streamed PCM), BINARY audio,
``audio.done`` (per sentence), ``session.done`` (utterance_index, total_sentences) per flush, and
``{"type": "error", "message"}`` with no code and no request id.

One kokoro synthesize becomes [session.config when its settings differ from the session's] +
input.text + input.done; the answers map back to synthesis_start / PCM / synthesis_complete / error
for the oldest utterance still open (vLLM-Omni has no request ids, so the translator keeps them).
Nothing is invented: synthesis_complete carries audio_bytes only when every audio.done of the
utterance reported total_bytes, and an error's code stays None.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from bidi_tts.chunker import split_sentences
from bidi_tts.dialects.base import Dialect, DialectUnsupported, Translator, WireMessage
from bidi_tts.frames import Frame, FrameClass, FrameKind, decode_control_frame

ROUTE = "/v1/audio/speech/stream"
# Streamed s16le PCM, one TTS request per sentence: the form the suite can judge (TTS-AUDIO, TTS-STREAM).
STREAMED_PCM = {"response_format": "pcm", "stream_audio": True, "split_granularity": "sentence"}
ORDER = "TTS-ORDER"  # the findings below are TTS-ORDER in its vllm-omni form (docs/dialects.md)


@dataclass
class _Utterance:
    """One flushed utterance the server still owes a session.done."""

    index: int
    request_id: str | None
    started: bool = False
    errored: bool = False
    sentences_open: set[int] = field(default_factory=set)
    sentences_done: int = 0
    reported_bytes: list[int | None] = field(default_factory=list)
    text: str = ""
    sentence_texts: list[str | None] = field(default_factory=list)  # audio.start's sentence_text, in order


class VllmOmniTranslator(Translator):
    def __init__(self, model: str | None = None) -> None:
        self.findings = []
        self._model = model
        self._settings: dict[str, Any] | None = None  # the session.config last sent
        self._next_index = 0
        self._open: deque[_Utterance] = deque()

    # -- client to server ----------------------------------------------------------------------
    def outgoing(self, payload: bytes | str, kind: FrameKind | None) -> list[WireMessage]:
        message = decode_control_frame(payload)
        if message is None:
            return [WireMessage(payload, kind, carries_text=True)]  # bad bytes go as they are
        kind_of = message.get("type")
        if kind_of == "cancel":
            raise DialectUnsupported("vllm-omni has no cancel message (its client can only flush or close)")
        if kind_of == "close":  # the dialect wants session.config first, even before a close
            first = [] if self._settings is not None else [self._config(self._settings_of({}), payload, kind)]
            return [*first, self._wire({"type": "session.close"}, payload, kind)]
        text = message.get("text")
        if kind_of not in (None, "synthesize") or not isinstance(text, str):
            return [WireMessage(payload, kind, carries_text=True)]
        wire: list[WireMessage] = []
        settings = self._settings_of(message)
        if settings != self._settings:
            wire.append(self._config(settings, payload, kind))
        # One input.text per sentence, as an LLM-fed client sends them: the server must keep them all.
        for part in text_parts(text):
            wire.append(self._wire({"type": "input.text", "text": part}, payload, kind, carries_text=True))
        wire.append(self._wire({"type": "input.done"}, payload, kind))
        rid = message.get("request_id")
        self._open.append(_Utterance(self._next_index, rid if isinstance(rid, str) else None, text=text))
        self._next_index += 1
        return wire

    def _settings_of(self, message: dict[str, Any]) -> dict[str, Any]:
        # vLLM-Omni's session config has no sample_rate: the model's native rate is what comes back.
        chosen = {"model": self._model, "voice": message.get("voice"), "speed": message.get("speed")}
        return {**{k: v for k, v in chosen.items() if v is not None}, **STREAMED_PCM}

    def _config(self, settings: dict[str, Any], like: bytes | str, kind: FrameKind | None) -> WireMessage:
        self._settings = settings
        return self._wire({"type": "session.config", **settings}, like, kind)

    @staticmethod
    def _wire(obj: dict[str, Any], like: bytes | str, kind: FrameKind | None, *,
              carries_text: bool = False) -> WireMessage:
        body = json.dumps(obj, ensure_ascii=False)
        return WireMessage(body if isinstance(like, str) else body.encode("utf-8"), kind, carries_text)

    # -- server to client ----------------------------------------------------------------------
    def incoming(self, frame: Frame) -> list[Frame]:
        cls, control = frame.classify()
        if cls is not FrameClass.CONTROL or control is None:
            return [frame]  # audio (and a TEXT frame that is not JSON) is the session's to judge
        match control.get("type"):
            case "audio.start" | "audio.done" | "session.done" as kind:
                return self._on_utterance_event(kind, frame, control)
            case "error":
                return self._on_error(frame, control)
            case _:
                return [frame]  # audio.chunk (base64 audio in JSON) and strangers surface as they are

    def _utterance(self, control: dict[str, Any]) -> _Utterance | None:
        index = control.get("utterance_index")
        for utterance in self._open:
            if utterance.index == index:
                return utterance
        return None

    def _on_utterance_event(self, kind: str, frame: Frame, control: dict[str, Any]) -> list[Frame]:
        """audio.start, audio.done and session.done name an open utterance; for none, a finding and the frame as is."""
        utterance = self._utterance(control)
        if utterance is None:
            self.findings.append((ORDER, f"{kind} for no open utterance: {control!r}"))
            return [frame]
        if kind == "audio.start":
            return self._on_audio_start(frame, control, utterance)
        if kind == "audio.done":
            return self._on_audio_done(control, utterance)
        return self._on_session_done(frame, control, utterance)

    def _on_audio_start(self, frame: Frame, control: dict[str, Any], utterance: _Utterance) -> list[Frame]:
        sentence = _sentence(control)
        if sentence in utterance.sentences_open:
            self.findings.append((ORDER, f"audio.start of sentence {sentence} twice without audio.done"))
        utterance.sentences_open.add(sentence)
        said = control.get("sentence_text")
        utterance.sentence_texts.append(said if isinstance(said, str) else None)
        if utterance.started or utterance.errored:
            return []  # a later sentence of a message already started
        utterance.started = True
        start: dict[str, Any] = {"type": "synthesis_start", "request_id": utterance.request_id,
                                 "encoding": "pcm_s16le" if control.get("format") == "pcm" else control.get("format")}
        for name in ("sample_rate", "channels"):
            if name in control:
                start[name] = control[name]
        return [_control(frame, start)]

    def _on_audio_done(self, control: dict[str, Any], utterance: _Utterance) -> list[Frame]:
        sentence = _sentence(control)
        if sentence not in utterance.sentences_open:
            self.findings.append((ORDER, f"audio.done of sentence {sentence} without its audio.start"))
        utterance.sentences_open.discard(sentence)
        utterance.sentences_done += 1
        total = control.get("total_bytes")
        utterance.reported_bytes.append(total if isinstance(total, int) and not isinstance(total, bool) else None)
        return []

    def _on_session_done(self, frame: Frame, control: dict[str, Any], utterance: _Utterance) -> list[Frame]:
        self._open.remove(utterance)
        if utterance.sentences_open:
            self.findings.append((ORDER, f"session.done of utterance {utterance.index} before audio.done of "
                                         f"sentences {sorted(utterance.sentences_open)}"))
        total = control.get("total_sentences")
        if total != utterance.sentences_done:
            self.findings.append((ORDER, f"session.done of utterance {utterance.index} says total_sentences="
                                         f"{total!r}, {utterance.sentences_done} audio.done arrived"))
        self._check_text_spoken(utterance)
        if utterance.errored:
            return []  # the error already ended the message
        complete: dict[str, Any] = {"type": "synthesis_complete", "request_id": utterance.request_id,
                                    "total_sentences": total}
        reported = utterance.reported_bytes
        if reported and all(b is not None for b in reported):
            complete["audio_bytes"] = sum(b for b in reported if b is not None)
        return [_control(frame, complete)]

    def _check_text_spoken(self, utterance: _Utterance) -> None:
        """Every word sent in the utterance's input.text parts is in the sentences the server says it spoke
        (judged only when each audio.start named its sentence_text, and not after an error)."""
        said = utterance.sentence_texts
        if utterance.errored or not said or any(s is None for s in said):
            return
        sent, spoken = _words(utterance.text), _words(" ".join(s for s in said if s is not None))
        if spoken != sent:
            self.findings.append((ORDER, f"utterance {utterance.index}: its sentences say {' '.join(spoken)!r}, "
                                         f"the text sent in {len(text_parts(utterance.text))} input.text parts "
                                         f"was {' '.join(sent)!r}"))

    def _on_error(self, frame: Frame, control: dict[str, Any]) -> list[Frame]:
        # The server handles one message at a time, so an error while utterances are open is the oldest's
        # (a second sentence failing too is still that one's, not the next utterance's).
        utterance = self._open[0] if self._open else None
        if utterance is not None:
            utterance.errored = True
        error = {**control, "request_id": utterance.request_id if utterance else None, "code": None}
        return [_control(frame, error)]

    @property
    def open_utterances(self) -> int:
        return len(self._open)


def text_parts(text: str) -> list[str]:
    """`text` as the input.text parts sent: one per sentence, each but the last with its trailing space."""
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return [text]
    return [s + " " for s in sentences[:-1]] + [sentences[-1]]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _sentence(control: dict[str, Any]) -> int:
    index = control.get("sentence_index")
    return index if isinstance(index, int) and not isinstance(index, bool) else -1


def _control(like: Frame, obj: dict[str, Any]) -> Frame:
    """A kokoro-sample control frame standing for `like` (same arrival time; TEXT where kinds are known)."""
    kind = FrameKind.TEXT if like.kind is not None else None
    return Frame(json.dumps(obj).encode("utf-8"), kind, like.received_at)


class VllmOmniDialect(Dialect):
    name = "vllm-omni"
    ws_path = ROUTE
    invocation_path = ROUTE.lstrip("/")
    summary = "vLLM-Omni's streaming speech protocol (session.config, input.text, input.done; audio.start, PCM, " \
              "audio.done, session.done)"

    def translator(self) -> Translator:
        return VllmOmniTranslator()
