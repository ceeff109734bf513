"""What the cases that act mid-synthesis share (cancel.1, close.synthesizing.1, close.client.1).

Each acts at a message's first sign of work (synthesis_start, or audio where there is none), or after a
time of its own when that sign is late: a container that says nothing until its whole message is made
gives its first sign at its end, and an act then would not be mid-synthesis at all.
"""

from __future__ import annotations

from bidi_tts_conformance.driver import Conversation, Reply
from bidi_tts_conformance.failures import CaseFailed


async def first_sign_of_work(conv: Conversation, rid: str, within: float, *, message: str = "the message",
                             expected: str = "synthesis") -> Reply:
    """Read until message `rid`'s first sign of work, or for `within` seconds; a refusal fails the case."""
    reply = await conv.wait_answer(rid, within=within)
    if reply.error is not None:
        code = reply.error.code or "(no code)"
        raise CaseFailed(f"{message} was refused with error {code}", expected=expected, actual=f"error {code}")
    return reply
