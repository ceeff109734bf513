"""Stateful testing: random interleavings of good messages, bad inputs, cancels and closes on one
session, with the session invariants checked after every step (Hypothesis RuleBasedStateMachine).

The default target is the good toy container; set CONFORMANCE_STATEFUL_URL to drive another one.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from bidi_tts.frames import FrameKind
from bidi_tts_conformance.driver import Conversation
from bidi_tts_conformance.targets import Target
from tests.toys.good import ServerThread, ToyContainer

BAD_INPUTS: list[tuple[bytes | str, FrameKind, set[str]]] = [
    ('{"text": "Hel', FrameKind.TEXT, {"invalid_json"}),
    ("[1, 2]", FrameKind.TEXT, {"not_an_object"}),
    (json.dumps({"text": "   "}), FrameKind.TEXT, {"text_required"}),
    (json.dumps({"text": "Hi.", "voice": "../../etc/passwd"}), FrameKind.TEXT, {"unknown_voice"}),
    (json.dumps({"text": "Hi.", "speed": -1}), FrameKind.BINARY, {"bad_speed"}),
    (json.dumps({"text": "Hi.", "sample_rate": 12345}), FrameKind.TEXT, {"bad_sample_rate"}),
    (json.dumps({"text": "Hi.", "type": "dance"}), FrameKind.BINARY, {"unknown_type"}),
    (b'{"text": "caf\xc3"}', FrameKind.BINARY, {"invalid_utf8"}),
]
TEXTS = st.sampled_from(["Hi.", "Hello there.", "One. Two.", "Café crème.", "A longer sentence to speak."])


class SessionMachine(RuleBasedStateMachine):
    """One container session driven at random; a close ends it and the next rule reopens one."""

    url: str = ""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.conv: Conversation | None = None
        self.sent = self.completed = self.refused = 0

    def run(self, coro):  # type: ignore[no-untyped-def]
        return self.loop.run_until_complete(asyncio.wait_for(coro, 20))

    async def _open(self) -> Conversation:
        transport = await Target(kind="url", base_url=self.url).connect()
        return Conversation(transport, silence=10, voice="af_heart", sample_rate=24_000)

    @initialize()
    def open_session(self) -> None:
        self.conv = self.run(self._open())

    @precondition(lambda self: self.conv is None)
    @rule()
    def reopen(self) -> None:
        self.conv = self.run(self._open())

    @precondition(lambda self: self.conv is not None)
    @rule(text=TEXTS, kind=st.sampled_from([FrameKind.TEXT, FrameKind.BINARY]),
          speed=st.sampled_from([0.5, 1.0, 2.0]))
    def synthesize(self, text: str, kind: FrameKind, speed: float) -> None:
        assert self.conv is not None
        reply = self.run(self.conv.say(text, kind=kind, speed=speed))
        self.sent += 1
        self.completed += 1
        assert reply.completed is not None and reply.completed.audio_bytes_reported == len(reply.audio)
        assert len(reply.audio) > 0 and len(reply.audio) % 2 == 0

    @precondition(lambda self: self.conv is not None)
    @rule(count=st.integers(min_value=2, max_value=4), text=TEXTS)
    def pipelined(self, count: int, text: str) -> None:
        assert self.conv is not None
        conv = self.conv

        async def go() -> None:
            rids = [await conv.synthesize(text) for _ in range(count)]
            for rid in rids:
                await conv.wait_reply(rid, succeed=True)

        self.run(go())
        self.sent += count
        self.completed += count

    @precondition(lambda self: self.conv is not None)
    @rule(bad=st.sampled_from(BAD_INPUTS))
    def bad_input(self, bad: tuple[bytes | str, FrameKind, set[str]]) -> None:
        assert self.conv is not None
        payload, kind, codes = bad
        conv = self.conv

        async def go() -> str | None:
            rid = conv.track()
            await conv.send_raw(payload, kind=kind)
            reply = await conv.wait_reply(rid)
            return reply.error.code if reply.error else None

        code = self.run(go())
        self.refused += 1
        assert code in codes

    @precondition(lambda self: self.conv is not None)
    @rule()
    def idle_cancel(self) -> None:
        assert self.conv is not None
        self.run(self.conv.send_json({"type": "cancel"}))

    @precondition(lambda self: self.conv is not None)
    @rule(kind=st.sampled_from([FrameKind.TEXT, FrameKind.BINARY]), busy=st.booleans())
    def close(self, kind: FrameKind, busy: bool) -> None:
        assert self.conv is not None
        conv = self.conv

        async def go() -> int | None:
            rid = await conv.synthesize("Closing now.") if busy else None
            await conv.close_request(kind=kind)
            if rid is not None:
                await conv.wait_reply(rid, succeed=True)  # TTS-CLOSE: the current message is finished first
            return (await conv.wait_closed()).code

        assert self.run(go()) == 1000
        self.conv = None

    @invariant()
    def no_protocol_violation(self) -> None:
        if self.conv is not None:
            assert self.conv.violations() == [], self.conv.violations()

    @invariant()
    def nothing_in_flight_between_steps(self) -> None:
        if self.conv is not None:
            assert self.conv.session.in_flight == 0

    def teardown(self) -> None:
        if self.conv is not None:
            self.run(self.conv.close())
        self.loop.close()


@pytest.fixture(scope="module")
def stateful_url() -> Iterator[str]:
    url = os.environ.get("CONFORMANCE_STATEFUL_URL")
    if url:
        yield url
        return
    with ServerThread(ToyContainer().app()) as server:
        yield server.url


@pytest.mark.timeout(120)
def test_session_state_machine(stateful_url: str) -> None:
    SessionMachine.url = stateful_url
    runner = SessionMachine.TestCase
    runner.settings = settings(max_examples=25, stateful_step_count=12, deadline=None,
                               suppress_health_check=list(HealthCheck), derandomize=True)
    runner().runTest()
