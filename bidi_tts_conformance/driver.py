"""A conversation: one Transport plus one ClientSession, with waits that turn into case failures.

Every frame goes through :class:`bidi_tts.session.ClientSession`, which tracks each message and
checks the ordering rules; :func:`bidi_tts_conformance.reply.file_frame` puts what arrived on the
:class:`Reply` of the message it answers. A conversation judges only the rules its case is about
(`focus`): any other violation becomes a note for the report, so one deviation fails the one case
that owns it instead of every case that happens to see it.

Waiting is bounded by silence, not by a fixed total: a wait fails when no frame at all arrives for
`silence` seconds (calibrated from the container; ``--reply-timeout`` sets it by hand), so a broken
container fails fast while a slow one that keeps streaming is given the time it needs. Every wait
takes that bound as `silence`; it is the one name for it along the way (Options, Calibration,
Conversation).

Six waits, each for a different thing a case waits on:

- :meth:`Conversation.pump_until`: the primitive: read frames until a condition of the case's own
  holds (several messages, several sessions); says why it stopped.
- :meth:`~Conversation.wait_answer`: one message's first sign (`within=`: a fixed time, never fails).
- :meth:`~Conversation.wait_reply`: one message's end; strict by default, `lenient=` for a case about
  what arrived rather than how it ended, `succeed=` to require success.
- :meth:`~Conversation.say`: send one message, then ``wait_reply(succeed=True)``: the common case.
- :meth:`~Conversation.wait_closed`: the container closes the session.
- :meth:`~Conversation.quiet`: what arrives in a fixed time when nothing should.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from typing import Any

from bidi_tts.deadline import Deadline
from bidi_tts.frames import FrameKind
from bidi_tts.protocol import SynthesizeRequest
from bidi_tts.session import ClientSession, ProtocolViolation, Rule, SessionEvent, Severity
from bidi_tts.transports.base import Transport, TransportClosed, TransportTimeout
from bidi_tts_conformance.diagnose import describe_close, describe_frame, worded
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.focus import EVERY_RULE, Notes, judged_by
from bidi_tts_conformance.reply import Reply, file_frame

__all__ = ["EVERY_RULE", "ONE_BURST_CHARS", "Conversation", "Notes", "Reply", "worded"]  # the cases' imports

ONE_BURST_CHARS = 20  # a message this short is one unit of work: its audio comes in one burst
EXPECTED = "synthesis_start, audio, synthesis_complete"


class Conversation:
    """Drives one session: send messages, collect replies, fail with the real cause."""

    def __init__(
        self,
        transport: Transport,
        *,
        silence: float,
        voice: str,
        sample_rate: int,
        focus: Collection[Rule] = EVERY_RULE,
        notes: Notes | None = None,
        end_silence: float | None = None,
        end_silence_one: float | None = None,
    ) -> None:
        self.transport = transport
        self.session = ClientSession()
        self.silence = silence  # the longest silence while a frame is due
        # Once a message's audio has started and stopped: the silence after which it counts as ended
        # without synthesis_complete (shorter than `silence` only for a container seen to send none).
        self.end_silence = silence if end_silence is None else min(end_silence, silence)
        self.end_silence_one = self.end_silence if end_silence_one is None else min(end_silence_one,
                                                                                    self.end_silence)
        self.voice = voice
        self.sample_rate = sample_rate
        self.focus = frozenset(focus)
        self.notes = notes if notes is not None else Notes()
        self.log: list[str] = []  # human description of every frame received, in order
        self.events: list[SessionEvent] = []
        self.replies: dict[str, Reply] = {}
        self._went_silent: dict[str, float] = {}  # request id -> the silence a lenient read ended on
        self.closed: TransportClosed | None = None
        self.closed_at: float | None = None
        self.closed_by_client = False
        # Ids the driver made up to track messages sent without one: a container cannot echo them.
        self.invented: set[str] = set()

    # -- sending -------------------------------------------------------------------------------
    # The suite sends what a case asks, rule-breaking included (a message after close is how
    # close.after.1 probes the container), so every send is recorded `on_purpose`.
    def request(self, text: str, **fields: Any) -> SynthesizeRequest:
        values: dict[str, Any] = {"voice": self.voice, "sample_rate": self.sample_rate}
        values.update(fields)
        return SynthesizeRequest(text=text, **values)

    async def synthesize(
        self,
        text: str,
        *,
        kind: FrameKind | None = FrameKind.TEXT,
        payload: dict[str, Any] | None = None,
        fragments: int | None = None,
        split_at: Sequence[int] | None = None,
        **fields: Any,
    ) -> str:
        """Send one synthesize message; returns its request_id.

        `payload` replaces the JSON body (its request_id, if any, is used for tracking);
        `fragments`/`split_at` send it as a fragmented message split at those byte offsets.
        """
        if payload is not None:
            rid = str(payload.get("request_id") or uuid.uuid4().hex)
            if not payload.get("request_id"):
                self.invented.add(rid)
            body = json.dumps(payload, ensure_ascii=False)
            self._record(self.request(text, request_id=rid, **fields))
        else:
            req = self.request(text, **fields)
            rid = req.request_id
            body = self._record(req)
        data = body.encode("utf-8")
        if split_at is not None or fragments is not None:
            cuts = sorted(split_at) if split_at is not None else _even_cuts(len(data), fragments or 2)
            parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
            await self._send(lambda: self.transport.send_fragmented(parts, kind=kind or FrameKind.BINARY))
        else:
            await self.send_raw(data if kind is not FrameKind.TEXT else body, kind=kind)
        return rid

    def track(self, request_id: str | None = None, text: str = "(raw message)") -> str:
        """Expect an answer to a raw message about to be sent (so its frames are attributed)."""
        req = self.request(text, request_id=request_id or uuid.uuid4().hex)
        if request_id is None:
            self.invented.add(req.request_id)
        self._record(req)
        return req.request_id

    def _record(self, req: SynthesizeRequest) -> str:
        """Record a message about to leave, give it a Reply; its JSON body."""
        body = self.session.synthesize(req, at=time.perf_counter(), on_purpose=True)
        self.replies[req.request_id] = Reply(self.session.records[req.request_id])
        return body

    async def send_raw(self, payload: bytes | str, *, kind: FrameKind | None = FrameKind.TEXT) -> None:
        """Send bytes exactly as given (bad inputs, close, cancel)."""
        await self._send(lambda: self.transport.send(payload, kind=kind))

    async def send_json(self, obj: Any, *, kind: FrameKind | None = FrameKind.TEXT) -> None:
        await self.send_raw(json.dumps(obj), kind=kind)

    async def close_request(self, kind: FrameKind | None = FrameKind.TEXT) -> None:
        await self.send_raw(self.session.close(on_purpose=True), kind=kind)

    async def _send(self, send: Callable[[], Any]) -> None:
        try:
            await send()
        except TransportClosed as closed:
            self._on_closed(closed)
            raise CaseFailed(f"the container had closed the session before the message was sent "
                             f"({describe_close(closed)})", expected="an open session",
                             actual=describe_close(closed)) from None

    # -- reading -------------------------------------------------------------------------------
    async def pump_until(self, done: Callable[[], bool], *, silence: float | None = None,
                         total: float | None = None) -> str | None:
        """Read frames until `done()`; None when done, else why not: "silence" (no frame for `silence`
        seconds, by default the conversation's), "total" (the `total` budget ran out while frames
        kept coming) or "closed"."""
        silence = self.silence if silence is None else silence
        deadline = Deadline(total)
        while not done():
            if deadline.expired:
                return "total"
            try:
                await self._read_frame(min(silence, deadline.remaining()))
            except TransportTimeout:
                return "total" if deadline.expired else "silence"
            except TransportClosed:
                return None if done() else "closed"
        return None

    async def _read_frame(self, silence: float) -> None:
        """Receive one frame, check it, file it on its reply and note what is outside the focus.
        Raises TransportClosed / TransportTimeout."""
        if self.closed is not None:
            raise self.closed
        try:
            frame = await self.transport.receive(timeout=silence)
        except TransportClosed as closed:
            self._on_closed(closed)
            raise
        self.log.append(describe_frame(frame.payload, frame.kind))
        undone = [r for r in self.replies.values() if not r.record.done]
        events = self.session.receive_frame(frame)
        self.events.extend(events)
        file_frame(frame, events, self.replies, self.session, undone)
        for event in events:
            if (isinstance(event, ProtocolViolation) and event.rule not in self.focus
                    and not self._about_invented_id(event)):
                self.notes.add(f"{event.clause}: {worded(event)} (judged by {judged_by(event.rule)})")

    def _on_closed(self, closed: TransportClosed) -> None:
        if self.closed is None:
            self.closed = closed
            self.closed_at = time.perf_counter()
            self.session.connection_closed(closed.code, closed.reason, at=self.closed_at)

    def received(self) -> str:
        """The last frames received, for failure details."""
        shown = self.log[-6:]
        more = f"{len(self.log) - len(shown)} earlier frames, then " if len(self.log) > len(shown) else ""
        return f"{more}{'; '.join(shown)}" if shown else "no frame at all"

    # -- waiting on one message ----------------------------------------------------------------
    async def wait_answer(self, rid: str, *, silence: float | None = None, within: float | None = None) -> Reply:
        """Wait for the first sign of an answer (synthesis_start, audio or an error), or a close; fails
        on `silence`. With `within`: read for at most that many seconds and never fail, the moment a
        case acts "mid-synthesis" on any container, also one that says nothing until its whole
        message is made."""
        reply = self.replies[rid]
        answered = lambda: reply.answered or reply.record.done  # noqa: E731
        if within is not None:
            await self.pump_until(answered, silence=within, total=within)
            return reply
        why = await self.pump_until(answered, silence=silence)
        if why == "silence":
            raise self._no_reply(reply, self.silence if silence is None else silence)
        return reply

    async def wait_reply(self, rid: str, *, silence: float | None = None, lenient: bool = False,
                         succeed: bool = False) -> Reply:
        """Wait until the message ends (synthesis_complete or an error).

        Strict (the default) fails on silence or a close. `lenient`, for a case about what arrived
        rather than how it ended: reads until the answer ends or goes silent and fails only when
        nothing at all answered (a missing end is noted for the cases that judge it). `succeed`
        also requires success: no error, no violation in focus (and, when lenient, some audio)."""
        reply = self.replies[rid]
        waited_out: float | None = None
        if lenient:
            waited_out = await self._read_answer(reply, silence)
            if waited_out is not None:
                self._went_silent[rid] = waited_out
        else:
            await self._read_end(reply, silence)
        if succeed:
            self._require_success(reply, lenient, waited_out)
        return reply

    def went_silent(self, reply: Reply) -> float | None:
        """The silence a lenient read of `reply` ended on (no end came), or None: a case that fails on
        what arrived passes it on as CaseFailed.silence_s when too little arrived because of it."""
        return self._went_silent.get(reply.request_id)

    async def say(self, text: str, *, silence: float | None = None, lenient: bool = False,
                  **fields: Any) -> Reply:
        """Send one message and wait for its successful end (:meth:`wait_reply` with `succeed`).
        `lenient`: for a case about the session rather than the message's framing, a missing
        synthesis_complete is only noted (audio.order.1 judges it)."""
        rid = await self.synthesize(text, **fields)
        return await self.wait_reply(rid, silence=silence, lenient=lenient, succeed=True)

    async def _read_end(self, reply: Reply, silence: float | None) -> None:
        why = await self._wait_end(reply, silence)
        if why == "closed":
            assert self.closed is not None
            raise CaseFailed(
                f"the container {describe_close(self.closed)} before finishing the message; received: "
                f"{self.received()}",
                expected=f"{EXPECTED}; the session stays open", actual=describe_close(self.closed))
        if why is not None:
            silence = silence if silence is not None else self.end_silence if reply.answered else self.silence
            raise self._no_reply(reply, silence)

    async def _read_answer(self, reply: Reply, silence: float | None) -> float | None:
        """Read what answers; the silence the reading ended on when no audio had come (else None)."""
        why = await self._wait_end(reply, silence)
        if not reply.answered:
            if why == "closed" and self.closed is not None:
                raise CaseFailed(f"the container {describe_close(self.closed)} without answering the message; "
                                 f"received: {self.received()}", expected="synthesis_start, audio",
                                 actual=describe_close(self.closed))
            raise self._no_reply(reply, self.silence if silence is None else silence)
        if why == "silence" and self.session.current is reply.record:
            self.session.give_up_current()
            self.notes.add("TTS-ORDER: no synthesis_complete; the audio stopped and nothing more arrived "
                           "(judged by audio.order.1)")
        return (self.silence if silence is None else silence) if why == "silence" and not reply.audio else None

    async def _wait_end(self, reply: Reply, silence: float | None) -> str | None:
        """Until the answer ends: `silence` before its audio starts, then (once audio flows) the end
        silence, which is shorter for a container seen to send no synthesis_complete."""
        why = await self.pump_until(lambda: bool(reply.audio) or reply.record.done, silence=silence)
        if why is None and not reply.record.done:
            one_burst = len(reply.record.text) <= ONE_BURST_CHARS
            if silence is None:
                silence = self.end_silence_one if one_burst else self.end_silence
            why = await self.pump_until(lambda: reply.record.done, silence=silence)
        return why

    def _require_success(self, reply: Reply, lenient: bool, waited_out: float | None = None) -> None:
        if reply.error is not None:
            code = reply.error.code or "(no code)"
            said = f": {reply.error.message!r}" if reply.error.message and not lenient else ""
            raise CaseFailed(f"a valid message was refused with error {code}{said}",
                             expected=EXPECTED, actual=f"error {code}")
        if lenient and not reply.audio:
            raise CaseFailed(f"no audio; received: {self.received()}", expected="audio", actual="no audio",
                             silence_s=waited_out)
        self.raise_violations()

    def _no_reply(self, reply: Reply, silence: float) -> CaseFailed:
        if reply.started is None and not reply.audio:
            what = "no answer (no synthesis_start, no audio, no error)"
        elif not reply.audio:
            what = "synthesis_start but no audio"
        else:
            what = f"synthesis_start and {len(reply.audio)} audio bytes but no synthesis_complete"
        return CaseFailed(f"{what}: nothing arrived for {silence:.1f} s; received: {self.received()}",
                          expected=EXPECTED, actual=what, silence_s=silence)

    # -- waiting on the session ----------------------------------------------------------------
    async def wait_closed(self, silence: float | None = None) -> TransportClosed:
        """Read (and check) frames until the container closes the session (`silence` bounds the
        silence and also the whole wait: a container that keeps sending must still close)."""
        silence = self.silence if silence is None else silence
        why = await self.pump_until(lambda: self.closed is not None, silence=silence, total=silence)
        if why is None and self.closed is not None:
            return self.closed
        raise CaseFailed(f"the container did not close the session within {silence:.1f} s; received: "
                         f"{self.received()}", expected="a close frame", actual="the session stayed open")

    async def quiet(self, seconds: float) -> list[str]:
        """Frames that arrive within `seconds` (expected: none)."""
        seen = len(self.log)
        await self.pump_until(lambda: False, silence=seconds, total=seconds)
        return self.log[seen:]

    # -- judging -------------------------------------------------------------------------------
    def violations(self, severity: Severity | None = Severity.ERROR) -> list[ProtocolViolation]:
        """Violations of the rules in focus (all rules for a conversation made outside a case)."""
        return [v for v in self.session.violations
                if v.rule in self.focus and (severity is None or v.severity is severity)
                and not self._about_invented_id(v)]

    def raise_violations(self) -> None:
        bad = self.violations()
        if bad:
            first = bad[0]
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise CaseFailed(f"{first.clause}: {worded(first)}{more}",
                             expected="frames as CONTRACT.md orders them", actual=worded(first))

    def warnings(self) -> list[str]:
        return [f"{v.clause}: {worded(v)}" for v in self.violations(Severity.WARNING)]

    def _about_invented_id(self, violation: ProtocolViolation) -> bool:
        """A request_id "not echoed" for a message that carried none (the id is the driver's own)."""
        return violation.rule is Rule.START_REQUEST_ID and any(repr(r) in violation.description
                                                                for r in self.invented)

    # -- ending --------------------------------------------------------------------------------
    @property
    def unfinished(self) -> bool:
        """Messages were sent whose answer had not ended when the client closed (work left running)."""
        return any(not r.record.done or r.record.given_up for r in self.replies.values())

    async def close(self) -> None:
        if self.closed is None:
            self.closed_by_client = True
        try:
            await self.transport.close()
        except Exception:  # the peer may already be gone; closing is best effort
            pass


def _even_cuts(length: int, parts: int) -> list[int]:
    step = max(1, length // parts)
    return [i * step for i in range(1, parts) if i * step < length]
