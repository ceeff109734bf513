"""What answered each message of a conversation.

:class:`bidi_tts.session.MessageRecord` already keeps a message's timings, totals and how it ended;
a :class:`Reply` is that record plus what the record does not keep and a case needs to judge: the
container's control frames as events, the audio bytes themselves and the kind of each frame.
:func:`file_frame` puts the events of one frame on the reply they belong to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bidi_tts.frames import Frame
from bidi_tts.session import (
    AudioReceived,
    ClientSession,
    ErrorReceived,
    MessageRecord,
    ProtocolViolation,
    Rule,
    SessionEvent,
    SynthesisCompleted,
    SynthesisStarted,
)


@dataclass(slots=True)
class Reply:
    """Everything that answered one synthesize message."""

    record: MessageRecord
    started: SynthesisStarted | None = None
    completed: SynthesisCompleted | None = None
    error: ErrorReceived | None = None
    audio: bytearray = field(default_factory=bytearray)
    frame_kinds: list[str] = field(default_factory=list)  # "text"/"binary"/"?" per frame in order

    @property
    def request_id(self) -> str:
        return self.record.request_id

    @property
    def answered(self) -> bool:
        """Any sign of an answer: synthesis_start, audio, or an error."""
        return self.started is not None or bool(self.audio) or self.error is not None


def file_frame(
    frame: Frame,
    events: Sequence[SessionEvent],
    replies: Mapping[str, Reply],
    session: ClientSession,
    undone: Sequence[Reply],
) -> Reply | None:
    """Put the events one frame made on the reply they answer; that reply, or None (a frame that
    answers no message the conversation sent). `undone`: the replies not done before the frame."""
    owner: Reply | None = None
    current = session.current
    for event in events:
        if isinstance(event, AudioReceived):
            owner = replies.get(event.request_id or "")
            if owner is not None:
                owner.audio.extend(event.pcm)
        elif isinstance(event, SynthesisStarted):
            owner = replies.get(current.request_id) if current else None
            if owner is not None:
                owner.started = event
        elif isinstance(event, SynthesisCompleted | ErrorReceived):
            owner = next((r for r in undone if r.record.done), None)  # the message this frame ended
            if owner is not None:
                if isinstance(event, SynthesisCompleted):
                    owner.completed = event
                else:
                    owner.error = event
        elif isinstance(event, ProtocolViolation) and event.rule is Rule.TEXT_NOT_JSON and current is not None:
            owner = replies.get(current.request_id)  # audio sent as TEXT
    if owner is not None:
        owner.frame_kinds.append(frame.kind.value if frame.kind else "?")
    return owner
