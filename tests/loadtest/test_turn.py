"""loadtest.turn over the sync WebSocket transport against the toy container."""

from __future__ import annotations

import pytest

from bidi_tts.session import ClientSession
from bidi_tts.transports.websocket_sync import SyncWebSocketTransport
from bidi_tts_loadtest.core.corpus import load_answers, parse_answers
from bidi_tts_loadtest.core.turn import TurnConfig, run_turn, tokenize
from tests.toys.good import ServerThread, ToyConfig, ToyContainer

pytestmark = pytest.mark.timeout(60)

ANSWER = "Sure, I can help. Your order shipped yesterday. It arrives Thursday."


def test_tokenize_round_trips() -> None:
    assert "".join(tokenize(ANSWER)) == ANSWER
    assert len(tokenize(ANSWER)) == 11


def test_corpus_has_about_thirty_multi_sentence_answers() -> None:
    answers = load_answers()
    assert 25 <= len(answers) <= 40
    assert all(a.count(".") + a.count("?") + a.count("!") >= 2 for a in answers)
    assert parse_answers("# c\nA b.\n\n\nC d.\n") == ["A b.", "C d."]


def test_bidi_turn_sends_one_message_per_sentence_and_measures_injected_ttfa() -> None:
    with ServerThread(ToyContainer(ToyConfig(first_audio_delay_s=0.05)).app()) as srv:
        transport = SyncWebSocketTransport.open(srv.url)
        session = ClientSession()
        seen = []
        result = run_turn(transport, session, ANSWER, TurnConfig(tokens_per_second=200),
                          on_message=lambda r, m: seen.append(m))
        transport.close()
    assert result.failure is None and result.errors == 0
    assert [r.text for r in result.records] == ["Sure, I can help.", "Your order shipped yesterday.",
                                                "It arrives Thursday."]
    assert len(seen) == 3
    for m in seen:
        assert m.ttfa_s is not None and 0.05 <= m.ttfa_s < 0.05 + 0.15  # toy tone synthesis adds CPU time
        assert m.complete_s is not None and m.complete_s >= m.ttfa_s
    # Tokens leave on schedule: the last sentence was sent no earlier than 10 tokens at 200 tok/s.
    assert result.records[-1].sent_at - result.started_at >= 10 / 200 - 0.005


def test_batch_turn_sends_one_message_after_the_last_token() -> None:
    with ServerThread(ToyContainer().app()) as srv:
        transport = SyncWebSocketTransport.open(srv.url)
        result = run_turn(transport, ClientSession(), ANSWER,
                          TurnConfig(tokens_per_second=100, first_token_delay_s=0.05, mode="batch"))
        transport.close()
    assert [r.text for r in result.records] == [ANSWER]
    # first token at 0.05 s, 11 tokens at 100/s: the message leaves at about 0.15 s
    assert result.records[0].sent_at - result.started_at == pytest.approx(0.15, abs=0.02)
    assert result.turn_ttfa_s is not None and result.turn_ttfa_s >= 0.15


def test_error_frame_fails_the_message_not_the_turn() -> None:
    with ServerThread(ToyContainer().app()) as srv:
        transport = SyncWebSocketTransport.open(srv.url)
        result = run_turn(transport, ClientSession(), ANSWER, TurnConfig(tokens_per_second=500,
                                                                          voice="xx_nobody"))
        transport.close()
    assert result.failure is None
    assert result.errors == 3
    assert {r.error_code for r in result.records} == {"unknown_voice"}


def test_silent_container_times_out() -> None:
    class Silent(ToyContainer):
        async def synthesize(self, ws, request):  # type: ignore[no-untyped-def]
            return None

    with ServerThread(Silent().app()) as srv:
        transport = SyncWebSocketTransport.open(srv.url)
        result = run_turn(transport, ClientSession(), "Hello there.",
                          TurnConfig(tokens_per_second=500, message_timeout_s=0.3))
        transport.close()
    assert result.failure == "timeout" and result.errors == 1
