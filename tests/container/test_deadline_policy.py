"""The scheduling policies on their own (no threads, a hand-set clock): deadlines, ties, starvation."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import pytest

from reference_container.policies import PlaybackEstimate, Policy, SessionQueues, pick, unit_deadline

_seq = itertools.count()
ESTIMATE = PlaybackEstimate(rtf=0.5)
MARGIN = 0.5


@dataclass
class FakeUnit:
    session_id: str
    enqueued_at: float
    audio_estimate_s: float = 2.0
    audio_s: float = 0.0
    seq: int = 0

    def __post_init__(self) -> None:
        self.seq = next(_seq)


def deadline_of(queues: SessionQueues, running: dict[str, list[FakeUnit]] | None = None,
                now: float = -math.inf):
    running = running or {}

    def deadline(unit: FakeUnit) -> float:
        return unit_deadline(unit, playback_end=queues.playback_end.get(unit.session_id, -math.inf),
                             ahead=running.get(unit.session_id, []), estimate=ESTIMATE, margin_s=MARGIN,
                             last_audio_at=queues.last_audio_at.get(unit.session_id, -math.inf), now=now)

    return deadline


def drain(policy: Policy, queues: SessionQueues) -> list[str]:
    order = []
    while (unit := pick(policy, queues, deadline_of(queues))) is not None:
        order.append(f"{unit.session_id}{unit.seq}")
    return order


def test_new_message_overtakes_a_session_that_holds_unplayed_audio() -> None:
    queues = SessionQueues()
    # A's listener has 6 s of audio in hand at t=10; its next sentence was queued at t=9.
    queues.played("A", now=10.0, audio_s=6.0)
    slack = FakeUnit("A", enqueued_at=9.0)
    queues.push(slack)
    fresh = FakeUnit("B", enqueued_at=10.5)  # a new message: nothing playing for B
    queues.push(fresh)
    deadline = deadline_of(queues)
    assert deadline(fresh) == 10.5  # due at once
    assert deadline(slack) == pytest.approx(16.0 - MARGIN - ESTIMATE.rtf * 2.0)
    assert pick(Policy.DEADLINE, queues, deadline) is fresh
    # Round-robin and fifo serve A's sentence first although its listener does not need it for 5 s.
    for policy in (Policy.ROUND_ROBIN, Policy.FIFO):
        q = SessionQueues()
        q.played("A", now=10.0, audio_s=6.0)
        q.push(slack)
        q.push(fresh)
        assert pick(policy, q, deadline_of(q)) is slack


def test_late_unit_is_still_served_and_first() -> None:
    queues = SessionQueues()
    queues.played("A", now=10.0, audio_s=1.0)  # A's audio ran out at t=11
    late = FakeUnit("A", enqueued_at=9.5)
    new_b, new_c = FakeUnit("B", enqueued_at=11.5), FakeUnit("C", enqueued_at=11.6)
    for unit in (new_b, new_c, late):
        queues.push(unit)
    deadline = deadline_of(queues)
    assert deadline(late) < 11.5  # it cannot make its deadline any more...
    assert [pick(Policy.DEADLINE, queues, deadline) for _ in range(3)] == [late, new_b, new_c]  # ...served first


def test_running_unit_of_the_session_pushes_its_next_unit_back() -> None:
    queues = SessionQueues()
    queues.played("A", now=10.0, audio_s=3.0)  # 3 s in hand: the next unit has slack (not floored)
    nxt = FakeUnit("A", enqueued_at=9.0)
    running = FakeUnit("A", enqueued_at=9.0, audio_estimate_s=4.0, audio_s=1.0)  # 3 s still to come
    alone = deadline_of(queues)(nxt)
    behind = deadline_of(queues, {"A": [running]})(nxt)
    assert behind == pytest.approx(alone + 3.0)


def test_ties_go_to_the_unit_submitted_first() -> None:
    queues = SessionQueues()
    units = [FakeUnit(s, enqueued_at=5.0) for s in "CAB"]  # same deadline: all due at t=5
    for unit in units:
        queues.push(unit)
    deadline = deadline_of(queues)
    assert [pick(Policy.DEADLINE, queues, deadline) for _ in range(3)] == units


def test_no_starvation_under_a_stream_of_new_messages() -> None:
    """A unit with slack waits only until its deadline: messages arriving later sort behind it."""
    queues = SessionQueues()
    queues.played("A", now=0.0, audio_s=3.0)
    patient = FakeUnit("A", enqueued_at=0.0)
    queues.push(patient)
    deadline = deadline_of(queues)
    due = deadline(patient)
    served_at = None
    for tick in range(1, 100):  # a new message from another session every 0.1 s, one served per tick
        now = tick * 0.1
        queues.push(FakeUnit(f"S{tick}", enqueued_at=now))
        if pick(Policy.DEADLINE, queues, deadline) is patient:
            served_at = now
            break
    assert served_at is not None
    assert served_at <= due + 0.1 + 1e-9


def test_fifo_is_submission_order_and_round_robin_alternates() -> None:
    queues = SessionQueues()
    for s in "AAAB":
        queues.push(FakeUnit(s, enqueued_at=0.0))
    fifo = [u[0] for u in drain(Policy.FIFO, queues)]
    for s in "AAAB":
        queues.push(FakeUnit(s, enqueued_at=0.0))
    rr = [u[0] for u in drain(Policy.ROUND_ROBIN, queues)]
    assert fifo == ["A", "A", "A", "B"]
    assert rr == ["A", "B", "A", "A"]


def test_playback_clock_restarts_after_the_listener_ran_dry() -> None:
    queues = SessionQueues()
    queues.played("A", now=0.0, audio_s=1.0)
    queues.played("A", now=0.5, audio_s=1.0)  # arrives while playing: queued behind
    assert queues.playback_end["A"] == 2.0
    queues.played("A", now=5.0, audio_s=1.0)  # arrives after a stall: plays from its arrival
    assert queues.playback_end["A"] == 6.0
    queues.forget_finished(7.0, busy=[])
    assert "A" not in queues.playback_end


def test_estimate_learns_rtf_and_speaking_rate() -> None:
    est = PlaybackEstimate(rtf=0.3, audio_s_per_char=0.07)
    for _ in range(50):
        est.observe(chars=100, speed=1.0, audio_s=5.0, synth_s=5.0)
    assert est.rtf == pytest.approx(1.0, abs=0.01)
    assert est.audio_estimate_s("x" * 100, 2.0) == pytest.approx(2.5, abs=0.05)


def test_a_late_unit_is_due_when_its_sessions_audio_last_came_not_earlier() -> None:
    """Under overload (rtf 1.5) a 6-s sentence after a 1-s clause would be "due" 8.5 s before its
    session's audio runs out, i.e. long before that audio even arrived; it is due at the arrival."""
    est = PlaybackEstimate(rtf=1.5)
    queues = SessionQueues()
    queues.played("A", now=10.0, audio_s=1.0)  # A's first clause arrived at t=10: plays until t=11
    sentence = FakeUnit("A", enqueued_at=0.0, audio_estimate_s=6.0)
    greeting = FakeUnit("B", enqueued_at=9.0, audio_estimate_s=1.0)  # waiting since before A's clause came
    common = {"ahead": [], "estimate": est, "margin_s": MARGIN, "now": 10.5}
    ideal = 11.0 - MARGIN - 1.5 * 6.0
    assert unit_deadline(sentence, playback_end=11.0, last_audio_at=10.0, **common) == 10.0 > ideal
    queues.push(sentence)
    queues.push(greeting)

    def deadline(unit: FakeUnit) -> float:
        return unit_deadline(unit, playback_end=queues.playback_end.get(unit.session_id, -math.inf),
                             last_audio_at=queues.last_audio_at.get(unit.session_id, -math.inf), **common)

    assert pick(Policy.DEADLINE, queues, deadline) is greeting


def test_a_running_unit_floors_its_sessions_next_deadline_at_the_pick() -> None:
    """With two workers: while A's unit is still being made, A's next (late) unit does not go before a
    message that has been waiting; so a session does not take both workers from a new message."""
    queues = SessionQueues()
    queues.played("A", now=10.0, audio_s=1.0)
    running = FakeUnit("A", enqueued_at=0.0, audio_estimate_s=1.0, audio_s=0.0)
    nxt = FakeUnit("A", enqueued_at=0.0, audio_estimate_s=6.0)
    waiting = FakeUnit("B", enqueued_at=10.2)
    for unit in (nxt, waiting):
        queues.push(unit)
    deadline = deadline_of(queues, {"A": [running]}, now=10.4)
    assert deadline(nxt) == 10.4
    assert pick(Policy.DEADLINE, queues, deadline) is waiting


def test_pick_stats_against_round_robin() -> None:
    from reference_container.policies import PickStats

    stats = PickStats()
    queues = SessionQueues()
    queues.played("A", now=0.0, audio_s=6.0)  # A has slack; B is new
    a, b = FakeUnit("A", enqueued_at=0.0), FakeUnit("B", enqueued_at=0.5)
    queues.push(a)
    queues.push(b)
    assert pick(Policy.DEADLINE, queues, deadline_of(queues, now=0.5), stats) is b  # round-robin: a
    assert pick(Policy.DEADLINE, queues, deadline_of(queues, now=0.6), stats) is a  # alone
    assert stats.as_dict() == {"picks": 2, "contested": 1, "differed": 1, "depth_sum": 3, "depth_max": 2}
