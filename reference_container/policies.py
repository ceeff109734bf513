"""Which queued synthesis unit a free worker takes next: `fifo`, `round-robin` or `deadline`.

Every policy sees the same state: one FIFO of units per session (a session's units must come out in
order, so only the head of each session's queue is ever a candidate). They differ only in which
session's head they pick:

- ``fifo``: the unit submitted first, whoever's it is. Whole messages are served first come, first
  served, like the AWS sample's global lock: a long message holds every other session.
- ``round-robin``: one unit per session in turn. Fair, but blind to urgency: a session whose client
  still holds 6 s of unplayed audio gets its next sentence as soon as one whose client hears nothing.
- ``deadline`` (earliest deadline first): each head unit is due when the audio its session has
  already been sent would run out if the client played it from its first frame at real time, less
  the unit's own estimated synthesis time and a safety margin. A unit of a session with nothing left
  to play (a new message, a new turn) is due the moment it was submitted. Ties go to the unit
  submitted first. Deadlines are absolute times, so a unit cannot starve: everything submitted after
  its deadline sorts behind it; and a unit that is already late sorts before everything on time,
  so it is still served, first.

  A late unit is due *now*, not in the past: a real player that ran dry resumes when the next audio
  arrives, so once a session can no longer keep ahead of its listener, the earliest a deadline can
  be is the moment that session's latest audio arrived (or, while one of its units is still being
  synthesized, the moment of the pick). Without that floor, a long sentence after a short one, under
  overload (a learned real-time factor near or above 1), is "due" seconds before its predecessor
  was even served, and a session reading a paragraph keeps overtaking a new message's first clause.
  With it, once a unit is due (at `d`), each other session overtakes it at most once: a session
  served after `d` has its next deadline after `d`. A new message's first unit is due when it is
  submitted, so it waits behind at most one unit per other session (round-robin's bound) besides
  the units already running.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol


class Policy(StrEnum):
    FIFO = "fifo"
    ROUND_ROBIN = "round-robin"
    DEADLINE = "deadline"


class Unit(Protocol):
    """What a policy reads of a queued job."""

    session_id: str
    seq: int
    enqueued_at: float
    audio_estimate_s: float
    audio_s: float


@dataclass(slots=True)
class PlaybackEstimate:
    """What the scheduler learns as it runs: real-time factor and speaking rate (moving averages)."""

    rtf: float = 0.3  # synthesis seconds per audio second, contention included
    audio_s_per_char: float = 0.07  # Kokoro speaks ~14 characters a second at speed 1
    weight: float = 0.2

    def audio_estimate_s(self, text: str, speed: float) -> float:
        return len(text) * self.audio_s_per_char / max(speed, 1e-3)

    def observe(self, chars: int, speed: float, audio_s: float, synth_s: float) -> None:
        if audio_s <= 0 or chars <= 0:
            return
        w = self.weight
        self.rtf = (1 - w) * self.rtf + w * (synth_s / audio_s)
        self.audio_s_per_char = (1 - w) * self.audio_s_per_char + w * (audio_s * speed / chars)


@dataclass(slots=True)
class PickStats:
    """Counts of what the policy had to decide, for explaining measurements (cheap: a few additions).

    - `contested`: picks made while more than one session had a unit waiting (with one, every policy
      takes the same unit);
    - `differed`: picks of another session than the one round-robin would have taken from the same
      queue (the session served least recently); always 0 under round-robin;
    - `depth_sum` / `depth_max`: units waiting at pick time, the picked one included.
    """

    picks: int = 0
    contested: int = 0
    differed: int = 0
    depth_sum: int = 0
    depth_max: int = 0

    def count(self, heads: list[Unit], chosen: Unit, depth: int) -> None:
        self.picks += 1
        if len(heads) > 1:
            self.contested += 1
            if chosen.session_id != heads[0].session_id:
                self.differed += 1
        self.depth_sum += depth
        self.depth_max = max(self.depth_max, depth)

    def as_dict(self) -> dict[str, int]:
        return {"picks": self.picks, "contested": self.contested, "differed": self.differed,
                "depth_sum": self.depth_sum, "depth_max": self.depth_max}


@dataclass(slots=True)
class SessionQueues:
    """One FIFO of units per session, sessions in round-robin order, and each session's playback end.

    Every pick moves the picked session to the back, whatever the policy: the front session is then
    always the one round-robin would serve next (what :class:`PickStats` compares against). Only
    round-robin reads that order; fifo and deadline pick by their own keys.
    """

    queues: OrderedDict[str, deque[Unit]] = field(default_factory=OrderedDict)
    # When the audio already handed out for the session runs out, played at real time from its first
    # frame (a stalled client resumes at the next frame's arrival, like bidi_tts.metrics' player).
    playback_end: dict[str, float] = field(default_factory=dict)
    # When the session's latest audio left the scheduler: the earliest a late unit of it is due.
    last_audio_at: dict[str, float] = field(default_factory=dict)

    def push(self, unit: Unit) -> None:
        self.queues.setdefault(unit.session_id, deque()).append(unit)

    def drop(self, session_id: str) -> list[Unit]:
        return list(self.queues.pop(session_id, deque()))

    def played(self, session_id: str, now: float, audio_s: float) -> None:
        """`audio_s` more seconds of the session's audio left the scheduler at `now`."""
        self.playback_end[session_id] = max(self.playback_end.get(session_id, -math.inf), now) + audio_s
        self.last_audio_at[session_id] = now

    def forget_finished(self, now: float, busy: Iterable[str]) -> None:
        """Drop playback ends in the past of idle sessions (the same as having none)."""
        keep = set(busy) | set(self.queues)
        for session_id in [s for s, end in self.playback_end.items() if end < now and s not in keep]:
            del self.playback_end[session_id]
            self.last_audio_at.pop(session_id, None)

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def pop_head(self, session_id: str) -> Unit:
        """Take the session's next unit and move the session to the back of the round-robin order."""
        queue = self.queues[session_id]
        unit = queue.popleft()
        self.queues.move_to_end(session_id)
        if not queue:
            del self.queues[session_id]
        return unit


DeadlineFn = Callable[[Unit], float]


def unit_deadline(
    unit: Unit,
    *,
    playback_end: float,
    ahead: Iterable[Unit],
    estimate: PlaybackEstimate,
    margin_s: float,
    last_audio_at: float = -math.inf,
    now: float = -math.inf,
) -> float:
    """When `unit` must start so its audio arrives before the session's audio runs out.

    `ahead`: the session's units already running (their audio, not yet all out, plays first).
    `last_audio_at`: when the session's latest audio left; `now`: the time of the pick. A late
    unit is due no earlier than the later of `last_audio_at` and, while a unit of the session is
    running, `now` (see the module docstring: the player resumes when audio arrives).
    """
    ahead = list(ahead)
    pending_s = sum(max(0.0, u.audio_estimate_s - u.audio_s) for u in ahead)
    if pending_s == 0.0 and playback_end <= unit.enqueued_at:
        return unit.enqueued_at  # nothing left to play when it came: due at once
    runs_out = max(playback_end, unit.enqueued_at) + pending_s
    ideal = runs_out - margin_s - estimate.rtf * unit.audio_estimate_s
    floor = max(last_audio_at, now) if ahead else last_audio_at
    return max(ideal, floor)


def pick(policy: Policy, queues: SessionQueues, deadline: DeadlineFn, stats: PickStats | None = None) -> Unit | None:
    """Take the next unit off `queues` according to `policy`, or None when nothing waits."""
    if not queues.queues:
        return None
    heads = [q[0] for q in queues.queues.values()]
    if policy is Policy.ROUND_ROBIN:
        best = heads[0]
    elif policy is Policy.FIFO:
        best = min(heads, key=lambda u: u.seq)
    else:
        best = min(heads, key=lambda u: (deadline(u), u.seq))
    if stats is not None:
        stats.count(heads, best, len(queues))
    return queues.pop_head(best.session_id)
