"""The dialect translators (bidi_tts.dialects): every mapping both ways, and what passes through."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bidi_tts.dialects import DIALECTS, DialectUnsupported, UnknownDialect, dialect_named
from bidi_tts.dialects.vllm_omni import VllmOmniTranslator
from bidi_tts.frames import Frame, FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession, ErrorReceived, ProtocolViolation, Rule, SynthesisCompleted, SynthesisStarted


def wire_objects(translator: VllmOmniTranslator, payload: bytes | str,
                 kind: FrameKind | None = FrameKind.TEXT) -> list[dict[str, Any]]:
    return [json.loads(w.payload) for w in translator.outgoing(payload, kind)]


def text(obj: dict[str, Any]) -> Frame:
    return Frame(json.dumps(obj).encode(), FrameKind.TEXT, 1.0)


def pcm(n: int = 4) -> Frame:
    return Frame(b"\x01\x00" * (n // 2), FrameKind.BINARY, 1.0)


def controls(frames: list[Frame]) -> list[dict[str, Any]]:
    return [json.loads(f.payload) for f in frames]


def say(translator: VllmOmniTranslator, rid: str = "r1", **fields: Any) -> list[dict[str, Any]]:
    return wire_objects(translator, json.dumps({"text": "Hello there.", "request_id": rid, **fields}))


def test_registry_names_both_dialects_and_rejects_others_in_one_line() -> None:
    assert set(DIALECTS) == {"kokoro-sample", "vllm-omni"}
    assert dialect_named("kokoro-sample").ws_path == "/invocations-bidirectional-stream"
    assert dialect_named("kokoro-sample").invocation_path is None
    omni = dialect_named("vllm-omni")
    assert (omni.ws_path, omni.invocation_path) == ("/v1/audio/speech/stream", "v1/audio/speech/stream")
    with pytest.raises(UnknownDialect, match=r"unknown dialect 'openai'.*kokoro-sample, vllm-omni"):
        dialect_named("openai")


def test_kokoro_sample_translator_is_the_identity() -> None:
    translator = dialect_named("kokoro-sample").translator()
    wires = translator.outgoing(b'{"text": "hi"}', FrameKind.BINARY)
    assert [(w.payload, w.kind) for w in wires] == [(b'{"text": "hi"}', FrameKind.BINARY)]
    frame = text({"type": "anything"})
    assert translator.incoming(frame) == [frame]


def test_first_synthesize_becomes_config_text_done_with_streamed_pcm() -> None:
    t = VllmOmniTranslator()
    sent = say(t, voice="af_heart", speed=1.0, sample_rate=24000)
    assert [m["type"] for m in sent] == ["session.config", "input.text", "input.done"]
    config = sent[0]
    assert config == {"type": "session.config", "voice": "af_heart", "speed": 1.0, "response_format": "pcm",
                      "stream_audio": True, "split_granularity": "sentence"}
    assert "sample_rate" not in config  # vLLM-Omni's session config has none
    assert sent[1] == {"type": "input.text", "text": "Hello there."}


def test_session_config_is_sent_again_only_when_the_settings_change() -> None:
    t = VllmOmniTranslator()
    say(t, "a", voice="af_heart")
    assert [m["type"] for m in say(t, "b", voice="af_heart")] == ["input.text", "input.done"]
    again = say(t, "c", voice="am_adam")
    assert [m["type"] for m in again] == ["session.config", "input.text", "input.done"]
    assert again[0]["voice"] == "am_adam"


def test_kind_and_payload_type_follow_the_caller() -> None:
    t = VllmOmniTranslator()
    wires = t.outgoing(b'{"text": "hi"}', FrameKind.BINARY)
    assert all(isinstance(w.payload, bytes) and w.kind is FrameKind.BINARY for w in wires)
    assert [w.carries_text for w in wires] == [False, True, False]


def test_close_becomes_session_close_and_cancel_is_declined() -> None:
    t = VllmOmniTranslator()
    first = wire_objects(t, '{"type": "close"}')  # session.config must come first, even before a close
    assert [m["type"] for m in first] == ["session.config", "session.close"]
    assert wire_objects(t, '{"type": "close"}') == [{"type": "session.close"}]
    with pytest.raises(DialectUnsupported, match="no cancel"):
        t.outgoing('{"type": "cancel"}', FrameKind.TEXT)


@pytest.mark.parametrize("raw", [b"\xff\xfe not utf-8", b"not json", b"[1, 2]", b'{"type": "ping"}',
                                 b'{"voice": "af_heart"}'])
def test_what_is_not_a_kokoro_message_goes_out_unchanged_in_kind(raw: bytes) -> None:
    wires = VllmOmniTranslator().outgoing(raw, FrameKind.BINARY)
    assert [(w.payload, w.kind) for w in wires] == [(raw, FrameKind.BINARY)]


def test_one_utterance_maps_to_start_pcm_complete() -> None:
    t = VllmOmniTranslator()
    say(t, "r1")
    start = t.incoming(text({"type": "audio.start", "utterance_index": 0, "sentence_index": 0,
                             "sentence_text": "Hello there.", "format": "pcm", "sample_rate": 24000, "channels": 1}))
    assert controls(start) == [{"type": "synthesis_start", "request_id": "r1", "encoding": "pcm_s16le",
                                "sample_rate": 24000, "channels": 1}]
    audio = pcm()
    assert t.incoming(audio) == [audio]
    assert t.incoming(text({"type": "audio.done", "utterance_index": 0, "sentence_index": 0})) == []
    done = t.incoming(text({"type": "session.done", "utterance_index": 0, "total_sentences": 1}))
    assert controls(done) == [{"type": "synthesis_complete", "request_id": "r1", "total_sentences": 1}]
    assert "audio_bytes" not in controls(done)[0]  # the server did not say it: nothing is made up
    assert t.findings == []


def test_audio_bytes_only_from_every_sentences_total_bytes() -> None:
    t = VllmOmniTranslator()
    say(t, "r1")
    for s in (0, 1):
        t.incoming(text({"type": "audio.start", "utterance_index": 0, "sentence_index": s, "format": "pcm",
                         "sample_rate": 24000}))
        t.incoming(text({"type": "audio.done", "utterance_index": 0, "sentence_index": s, "total_bytes": 10}))
    done = controls(t.incoming(text({"type": "session.done", "utterance_index": 0, "total_sentences": 2})))
    assert done[0]["audio_bytes"] == 20


def test_later_sentences_do_not_start_the_message_again() -> None:
    t = VllmOmniTranslator()
    say(t)
    first = t.incoming(text({"type": "audio.start", "utterance_index": 0, "sentence_index": 0, "format": "pcm"}))
    t.incoming(text({"type": "audio.done", "utterance_index": 0, "sentence_index": 0}))
    second = t.incoming(text({"type": "audio.start", "utterance_index": 0, "sentence_index": 1, "format": "pcm"}))
    assert len(first) == 1 and second == []


def test_request_ids_come_back_in_order_by_utterance_index() -> None:
    t = VllmOmniTranslator()
    say(t, "first")
    say(t, "second")
    for index, rid in ((0, "first"), (1, "second")):
        start = controls(t.incoming(text({"type": "audio.start", "utterance_index": index, "sentence_index": 0,
                                          "format": "pcm", "sample_rate": 24000})))
        t.incoming(text({"type": "audio.done", "utterance_index": index, "sentence_index": 0}))
        done = controls(t.incoming(text({"type": "session.done", "utterance_index": index, "total_sentences": 1})))
        assert start[0]["request_id"] == done[0]["request_id"] == rid
    assert t.open_utterances == 0


def test_error_gets_the_open_utterances_id_and_no_code_and_ends_it() -> None:
    t = VllmOmniTranslator()
    say(t, "r1")
    error = controls(t.incoming(text({"type": "error", "message": "Generation failed", "partial_audio": False})))
    assert error == [{"type": "error", "message": "Generation failed", "partial_audio": False,
                      "request_id": "r1", "code": None}]
    t.incoming(text({"type": "audio.start", "utterance_index": 0, "sentence_index": 0, "format": "pcm"}))
    t.incoming(text({"type": "audio.done", "utterance_index": 0, "sentence_index": 0, "error": True}))
    # the dialect still closes the utterance; that is not a second end of the message
    assert t.incoming(text({"type": "session.done", "utterance_index": 0, "total_sentences": 1})) == []


def test_error_with_nothing_open_has_no_request_id() -> None:
    out = controls(VllmOmniTranslator().incoming(text({"type": "error", "message": "Invalid JSON message"})))
    assert out[0]["request_id"] is None and out[0]["code"] is None


@pytest.mark.parametrize("obj", [
    {"type": "audio.chunk", "utterance_index": 0, "sentence_index": 0, "audio_b64": "AQABAA=="},
    {"type": "synthesis_progress"},
])
def test_frames_the_dialect_does_not_map_surface_unchanged(obj: dict[str, Any]) -> None:
    t = VllmOmniTranslator()
    say(t)
    frame = text(obj)
    assert t.incoming(frame) == [frame]


def test_base64_audio_in_json_is_judged_by_the_session_rules() -> None:
    t, session = VllmOmniTranslator(), ClientSession()
    session.synthesize(SynthesizeRequest(text="Hello there.", request_id="r1"), at=0.0)
    say(t, "r1")
    events = []
    for obj in ({"type": "audio.start", "utterance_index": 0, "sentence_index": 0, "format": "pcm",
                 "sample_rate": 24000},
                {"type": "audio.chunk", "utterance_index": 0, "sentence_index": 0, "audio_b64": "AQABAA=="}):
        for frame in t.incoming(text(obj)):
            events += session.receive_frame(frame)
    assert any(isinstance(e, ProtocolViolation) and e.rule is Rule.AUDIO_IN_JSON for e in events)


def test_a_whole_translated_exchange_satisfies_the_client_session() -> None:
    t, session = VllmOmniTranslator(), ClientSession()
    session.synthesize(SynthesizeRequest(text="Hello there.", request_id="r1"), at=0.0)
    say(t, "r1")
    events = []
    for frame in [text({"type": "audio.start", "utterance_index": 0, "sentence_index": 0, "format": "pcm",
                        "sample_rate": 24000, "channels": 1}), pcm(480),
                  text({"type": "audio.done", "utterance_index": 0, "sentence_index": 0, "total_bytes": 480}),
                  text({"type": "session.done", "utterance_index": 0, "total_sentences": 1})]:
        for out in t.incoming(frame):
            events += session.receive_frame(out)
    assert next(type(e) for e in events if not isinstance(e, ProtocolViolation)) is SynthesisStarted
    assert any(isinstance(e, SynthesisCompleted) and e.audio_bytes_reported == 480 for e in events)
    assert not [e for e in events if isinstance(e, ProtocolViolation)]
    assert not [e for e in events if isinstance(e, ErrorReceived)]


@pytest.mark.parametrize("frames, finding", [
    ([{"type": "audio.start", "utterance_index": 0, "sentence_index": 0},
      {"type": "session.done", "utterance_index": 0, "total_sentences": 1}], "before audio.done"),
    ([{"type": "audio.start", "utterance_index": 0, "sentence_index": 0},
      {"type": "audio.done", "utterance_index": 0, "sentence_index": 0},
      {"type": "session.done", "utterance_index": 0, "total_sentences": 3}], "total_sentences=3"),
    ([{"type": "audio.done", "utterance_index": 0, "sentence_index": 0}], "without its audio.start"),
    ([{"type": "session.done", "utterance_index": 7, "total_sentences": 0}], "no open utterance"),
])
def test_breaks_of_the_dialects_own_order_are_findings(frames: list[dict[str, Any]], finding: str) -> None:
    t = VllmOmniTranslator()
    say(t)
    for obj in frames:
        t.incoming(text(obj))
    assert any(clause == "TTS-ORDER" and finding in why for clause, why in t.findings), t.findings


def test_text_goes_as_one_input_text_per_sentence_and_nothing_is_lost() -> None:
    from bidi_tts.dialects.vllm_omni import text_parts

    text = "One sentence here. Another one! And Dr. Smith, a third?"
    parts = text_parts(text)
    assert len(parts) == 3 and "".join(parts) == text
    assert text_parts("no end") == ["no end"] and text_parts("  ") == ["  "]
    t = VllmOmniTranslator()
    sent = wire_objects(t, json.dumps({"text": text}))
    assert [m["text"] for m in sent if m["type"] == "input.text"] == parts


def _flush(t: VllmOmniTranslator, said: list[str | None]) -> None:
    for i, sentence in enumerate(said):
        start = {"type": "audio.start", "utterance_index": 0, "sentence_index": i, "format": "pcm"}
        if sentence is not None:
            start["sentence_text"] = sentence
        t.incoming(text(start))
        t.incoming(text({"type": "audio.done", "utterance_index": 0, "sentence_index": i}))
    t.incoming(text({"type": "session.done", "utterance_index": 0, "total_sentences": len(said)}))


def test_a_server_that_drops_input_text_parts_is_a_finding() -> None:
    t = VllmOmniTranslator()
    wire_objects(t, json.dumps({"text": "One sentence here. Another one. A third."}))
    _flush(t, ["A third."])
    assert any("its sentences say 'a third'" in why for _, why in t.findings), t.findings


@pytest.mark.parametrize("said", [["One sentence here.", "Another one.", "A third."],
                                  ["One sentence here. Another one.", "A third."],
                                  [None]])  # no sentence_text: nothing to compare, nothing judged
def test_all_text_spoken_or_not_said_is_no_finding(said: list[str | None]) -> None:
    t = VllmOmniTranslator()
    wire_objects(t, json.dumps({"text": "One sentence here. Another one. A third."}))
    _flush(t, said)
    assert t.findings == []


def test_a_second_error_of_the_same_utterance_is_not_given_to_the_next() -> None:
    t = VllmOmniTranslator()
    say(t, "first")
    say(t, "second")
    ids = [controls(t.incoming(text({"type": "error", "message": f"sentence {i} failed"})))[0]["request_id"]
           for i in (0, 1)]
    assert ids == ["first", "first"]


class FakeInner:
    """A transport stand-in: records what is sent, plays back queued frames, then times out."""

    knows_frame_kind = True
    close_code = None
    extra = "forwarded"

    def __init__(self, frames: list[Frame]) -> None:
        self.sent: list[tuple[str, Any, Any]] = []
        self.frames = list(frames)

    async def send(self, payload: bytes | str, *, kind: FrameKind | None = None) -> None:
        self.sent.append(("one", payload, kind))

    async def send_fragmented(self, fragments: list[bytes], *, kind: FrameKind) -> None:
        self.sent.append(("fragmented", list(fragments), kind))

    async def receive(self, timeout: float | None = None) -> Frame:
        from bidi_tts.transports.base import TransportTimeout

        if not self.frames:
            raise TransportTimeout("nothing")
        return self.frames.pop(0)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        pass


def test_dialect_transport_translates_sends_and_swallows_dialect_only_frames() -> None:
    import asyncio

    from bidi_tts.transports.base import TransportTimeout
    from bidi_tts.transports.dialect import DialectTransport

    inner = FakeInner([text({"type": "audio.start", "utterance_index": 0, "sentence_index": 0, "format": "pcm",
                             "sample_rate": 24000}), pcm(),
                       text({"type": "audio.done", "utterance_index": 0, "sentence_index": 0}),
                       text({"type": "session.done", "utterance_index": 0, "total_sentences": 1})])
    transport = DialectTransport(inner, VllmOmniTranslator())  # type: ignore[arg-type]

    async def talk() -> list[Frame]:
        await transport.send(b'{"text": "Hi there.", "request_id": "r1"}', kind=FrameKind.BINARY)
        await transport.send_fragmented([b"\xff", b"\xfe"], kind=FrameKind.BINARY)  # not JSON: as it was
        got = [await transport.receive(1.0) for _ in range(3)]
        with pytest.raises(TransportTimeout):
            await transport.receive(0.05)
        return got

    got = asyncio.run(talk())
    assert [json.loads(p)["type"] for how, p, k in inner.sent if how == "one"] == \
        ["session.config", "input.text", "input.done"]
    assert all(k is FrameKind.BINARY for _, _, k in inner.sent)
    assert inner.sent[-1] == ("fragmented", [b"\xff", b"\xfe"], FrameKind.BINARY)
    assert json.loads(got[0].payload)["type"] == "synthesis_start" and got[1].kind is FrameKind.BINARY
    assert json.loads(got[2].payload)["type"] == "synthesis_complete"
    assert transport.extra == "forwarded"


def test_a_translated_fragmented_message_goes_fragmented_where_it_holds_the_text() -> None:
    import asyncio

    from bidi_tts.transports.dialect import DialectTransport

    inner = FakeInner([])
    transport = DialectTransport(inner, VllmOmniTranslator())  # type: ignore[arg-type]
    body = b'{"text": "Split me."}'
    asyncio.run(transport.send_fragmented([body[:5], body[5:12], body[12:]], kind=FrameKind.TEXT))
    hows = [how for how, _, _ in inner.sent]
    assert hows == ["one", "fragmented", "one"]
    parts = inner.sent[1][1]
    assert len(parts) == 3 and json.loads(b"".join(parts)) == {"type": "input.text", "text": "Split me."}


def test_a_dialect_can_be_served_on_another_route() -> None:
    from bidi_tts.dialects import BadRoute, dialect_at
    from bidi_tts.protocol import WS_PATH

    omni = dialect_at("vllm-omni")
    assert omni.ws_path == "/v1/audio/speech/stream" and omni.invocation_path == "v1/audio/speech/stream"
    relayed = dialect_at("vllm-omni", WS_PATH)  # a SageMaker relay taking vLLM-Omni's wire on the default route
    assert relayed.name == "vllm-omni" and relayed.ws_path == WS_PATH and relayed.invocation_path is None
    assert type(relayed.translator()) is type(omni.translator()) and not relayed.is_identity
    other = dialect_at("kokoro-sample", "/v2/tts")
    assert other.invocation_path == "v2/tts" and other.is_identity
    for bad in ("v2/tts", "/a?b=1", "/a b"):
        with pytest.raises(BadRoute, match="--ws-path must be a path"):
            dialect_at("vllm-omni", bad)
