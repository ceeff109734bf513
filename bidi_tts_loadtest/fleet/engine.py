"""The fleet simulation's event loop (discrete events, seeded): arrivals, routing, instances, the autoscaler.

One queue of timed, typed events (:class:`Completion`, :class:`Tick`, :class:`Ready`, :class:`Turn`,
:class:`SessionEnd`), ordered by time and then by when they were scheduled, merged with the trace's
arrivals; :class:`FleetSimulation` holds the state and handles each kind in a method of its own.

A simulation: every latency comes from the instance model (:mod:`bidi_tts_loadtest.fleet.instance`),
which comes from one instance's measured curve. Routing is least outstanding requests (SageMaker's
``LEAST_OUTSTANDING_REQUESTS``) among the instances in service; starting instances get nothing; an
instance at ``queue_bound`` refuses. A removed instance drains: its requests finish, its sessions are
dropped (counted). Instances are billed from the decision that starts them to the end of their drain.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bidi_tts.fleet_plan import Curve, Load, Policy
from bidi_tts_loadtest.fleet.autoscaler import Autoscaler
from bidi_tts_loadtest.fleet.instance import FlowServer, SessionLatency, overhead_s, throughput_table, work_draws
from bidi_tts_loadtest.fleet.routing import LeastOutstanding
from bidi_tts_loadtest.fleet.traces import Trace, arrivals, request_rates, session_rates

#: After the trace ends, requests still queued get this long to finish; what is left counts as infinitely late.
DRAIN_LIMIT_S = 3600.0


# -- the events: one class per kind, each with only the fields it needs --------------------------------------

@dataclass(frozen=True, slots=True)
class Completion:
    """An instance's server finishes its head request (stale when the server was rescheduled since)."""

    instance: int
    version: int


@dataclass(frozen=True, slots=True)
class Tick:
    """The autoscaler samples the metric (every ``sample_s``)."""


@dataclass(frozen=True, slots=True)
class Ready:
    """A started instance begins to serve, ``scale_out_s`` after the decision."""

    instance: int


@dataclass(frozen=True, slots=True)
class Turn:
    """A session speaks a turn; it speaks again after an exponential gap while its life lasts."""

    session: int
    ends_ms: int  # the session's end, whole milliseconds: no turn starts at or after it


@dataclass(frozen=True, slots=True)
class SessionEnd:
    session: int


Event = Completion | Tick | Ready | Turn | SessionEnd


@dataclass(frozen=True, slots=True)
class Setup:
    load: Load
    curve: Curve
    policy: Policy
    scale_out_s: float           # decision to serving: the launch, without the alarm's detection
    queue_bound: int | None
    trace: Trace                 # in simulated units (already divided by any scale-down)
    window_s: float = 60.0
    sample_s: float = 1.0
    session_mean_s: float = 180.0
    turn_interval_s: float = 10.0
    seed: int = 0
    detection_lag_s: float = 0.0  # the part of the plan's scale-out time the simulated alarm models itself


@dataclass(slots=True)
class Windows:
    """Per window of ``window_s``: latencies (ms) by the window a request arrived (a turn started) in."""

    latencies: list[list[float]]
    refused: list[int]
    dropped: list[int]
    over_curve: list[int]       # turns whose session count was above the curve's largest level
    served: list[int]
    arrived: list[int]
    in_service: list[int]       # at the window's end
    starting: list[int]


@dataclass(slots=True)
class Result:
    windows: Windows
    samples: list[tuple[float, int, int, float]]  # (t, in service, starting, metric) every datapoint period
    instance_s: float                              # instance-seconds billed
    unfinished: int
    events: int
    scale_outs: list[tuple[float, int]] = field(default_factory=list)   # (t, added)
    scale_ins: list[float] = field(default_factory=list)
    per_instance: list[tuple[float, list[int]]] = field(default_factory=list)  # (t, outstanding by serving instance)
    settled_at_s: float | None = None  # where a watch stopped the run (None: the whole trace was simulated)


#: Called after each autoscaler sample with its time and the results so far; True stops the run there.
Watch = Callable[[float, Result], bool]


class _Instance:
    __slots__ = ("born", "members", "server", "sessions", "state", "works")

    def __init__(self, x: list[float] | None, born: float, state: str) -> None:
        self.server = FlowServer(x) if x is not None else None
        self.works: deque[float] = deque()
        self.sessions = 0
        self.members: set[int] = set()
        self.state = state   # "starting" | "serving" | "draining" | "gone"
        self.born = born

    def outstanding(self) -> int:
        return len(self.server.queue) if self.server is not None else self.sessions


class FleetSimulation:
    """The state of one run and a handler per event kind; :meth:`run` drives the loop."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.rng = np.random.default_rng(setup.seed)
        self.nwin = max(1, math.ceil(setup.trace.duration_s / setup.window_s))
        self.window_s = setup.window_s
        n = self.nwin
        self.win = Windows([[] for _ in range(n)], [0] * n, [0] * n, [0] * n, [0] * n, [0] * n, [0] * n, [0] * n)
        self.request = setup.load == "request"
        self.bound = setup.queue_bound if setup.queue_bound is not None else math.inf
        self.x = throughput_table(setup.curve, int(min(self.bound, 100_000))) if self.request else None
        self.delay_ms = overhead_s(setup.curve) * 1000 if self.request else 0.0
        self.latency = None if self.request else SessionLatency(setup.curve)
        self.end_t = setup.trace.duration_s
        if self.request:
            times = arrivals(request_rates(setup.trace), self.rng)
            works = work_draws(setup.curve, len(times), self.rng)
        else:
            start_n = self.rng.poisson(setup.trace.at(0.0))
            times = np.concatenate([np.zeros(start_n),
                                    arrivals(session_rates(setup.trace, setup.session_mean_s), self.rng)])
            works = self.rng.exponential(setup.session_mean_s, len(times))  # session durations
        self.arrival_times: list[float] = times.tolist()
        self.works: list[float] = works.tolist()
        self.normals = iter(self.rng.standard_normal(1 << 16).tolist())
        self.fleet: list[_Instance] = [_Instance(self.x, 0.0, "serving") for _ in range(setup.policy.min_instances)]
        self.serving = list(self.fleet)  # in the order they entered service
        self.route = LeastOutstanding()
        for i in range(len(self.fleet)):
            self.route.join(i, 0)
        self.scaler = Autoscaler(setup.policy)
        self.queue: list[tuple[float, int, Event]] = []
        self.scheduled = 0
        self.res = Result(self.win, [], 0.0, 0, 0)
        self.sessions: list[int] = []  # session id -> instance index (-1: ended or dropped)

    # -- helpers ------------------------------------------------------------------------------------------
    def push(self, t: float, event: Event) -> None:
        self.scheduled += 1
        heapq.heappush(self.queue, (t, self.scheduled, event))

    def window(self, t: float) -> int:
        w = int(t / self.window_s)
        return w if w < self.nwin else self.nwin - 1

    def normal(self) -> float:
        value = next(self.normals, None)
        if value is None:
            self.normals = iter(self.rng.standard_normal(1 << 16).tolist())
            value = next(self.normals)
        return value

    def retire(self, i: int, now: float) -> None:
        inst = self.fleet[i]
        inst.state = "gone"
        self.res.instance_s += max(0.0, min(now, self.end_t) - inst.born)

    # -- the loop -----------------------------------------------------------------------------------------
    def run(self, watch: Watch | None = None) -> Result:
        self.push(self.setup.sample_s, Tick())
        # the loop runs once an event (millions): what it reads is bound to locals, completions go straight
        queue, times, works, res = self.queue, self.arrival_times, self.works, self.res
        pop, on_arrival, on_completion = heapq.heappop, self.on_arrival, self.on_completion
        last = self.end_t + DRAIN_LIMIT_S if self.request else self.end_t
        next_arrival, count = 0, len(times)
        while True:
            arrival_t = times[next_arrival] if next_arrival < count else math.inf
            if queue and queue[0][0] <= arrival_t:
                now, _, event = pop(queue)
                if now > last:
                    break
                res.events += 1
                if type(event) is Completion:
                    on_completion(now, event)
                    continue
                self.handle(now, event)
                if watch is not None and type(event) is Tick and now <= self.end_t and watch(now, res):
                    res.settled_at_s = now
                    break
                continue
            if next_arrival >= count:
                break
            res.events += 1
            on_arrival(arrival_t, works[next_arrival])
            next_arrival += 1
        self.finish()
        return res

    def handle(self, now: float, event: Event) -> None:
        match event:
            case Completion():
                self.on_completion(now, event)
            case Tick():
                self.on_tick(now)
            case Ready(instance=i):
                self.fleet[i].state = "serving"
                self.serving.append(self.fleet[i])
                self.route.join(i, self.fleet[i].outstanding())
            case Turn():
                self.on_turn(now, event)
            case SessionEnd(session=sid):
                self.on_session_end(sid)

    # -- the handlers -------------------------------------------------------------------------------------
    def on_arrival(self, now: float, work: float) -> None:
        """A request (work in mean-1 units) or a session (work: its duration) arrives."""
        w = int(now / self.window_s)  # self.window(now), inline: this runs once a request
        if w >= self.nwin:
            w = self.nwin - 1
        win = self.win
        win.arrived[w] += 1
        ti = self.route.least()  # least outstanding, the earliest in service among equals
        if ti is None:
            self.refuse(w)
            return
        target = self.fleet[ti]
        srv = target.server
        if (len(srv.queue) if srv is not None else target.sessions) >= self.bound:
            self.refuse(w)
            return
        if srv is not None:  # request load
            due = srv.admit(now, work, target.works)
            self.route.update(ti, len(srv.queue))
            self.scheduled += 1
            heapq.heappush(self.queue, (due, self.scheduled, Completion(ti, srv.version)))
            return
        sid = len(self.sessions)
        self.sessions.append(ti)
        target.sessions += 1
        self.route.update(ti, target.sessions)
        target.members.add(sid)
        ends = now + work
        self.push(ends, SessionEnd(sid))
        self.push(now, Turn(sid, int(ends * 1000.0)))  # the session opens with a turn

    def refuse(self, w: int) -> None:
        """No instance in service, or the least busy one at ``queue_bound``: the arrival is refused."""
        self.win.refused[w] += 1
        if not self.request:
            self.sessions.append(-1)  # the session's id, never routed

    def on_completion(self, now: float, event: Completion) -> None:
        inst = self.fleet[event.instance]
        srv = inst.server
        if srv is None or event.version != srv.version:
            return  # superseded by a later arrival's reschedule
        arrived = srv.complete(now, inst.works)
        self.route.update(event.instance, len(srv.queue))
        w = int(arrived / self.window_s)  # self.window(arrived), inline
        if w >= self.nwin:
            w = self.nwin - 1
        win = self.win
        win.latencies[w].append((now - arrived) * 1000.0 + self.delay_ms)
        win.served[w] += 1
        if srv.queue:
            self.push(srv.due(), Completion(event.instance, srv.version))
        elif inst.state == "draining":
            self.retire(event.instance, now)

    def on_tick(self, now: float) -> None:
        """The autoscaler's sample: the metric is the fleet's outstanding work over the instances in service."""
        if now > self.end_t + 1e-9:
            return
        serving = self.serving
        starting = sum(1 for f in self.fleet if f.state == "starting")
        total = sum(f.outstanding() for f in serving)
        metric = total / len(serving) if serving else (math.inf if total else 0.0)
        d = self.scaler.observe(now, metric, len(serving), starting)
        if self.scaler.datapoints and self.scaler.datapoints[-1][0] == now:
            self.res.samples.append((now, len(serving), starting, self.scaler.datapoints[-1][1]))
            self.res.per_instance.append((now, [f.outstanding() for f in serving]))
        for _ in range(d.add):
            self.fleet.append(_Instance(self.x, now, "starting"))
            self.push(now + self.setup.scale_out_s, Ready(len(self.fleet) - 1))
        if d.add:
            self.res.scale_outs.append((now, d.add))
        if d.remove and serving:
            self.scale_in(now)
        w = self.window(now - 1e-9)
        self.win.in_service[w] = len(serving)
        self.win.starting[w] = starting + d.add
        self.push(now + self.setup.sample_s, Tick())

    def scale_in(self, now: float) -> None:
        """The least busy instance leaves: requests drain, sessions are dropped (counted)."""
        vi = self.route.least()
        assert vi is not None
        victim = self.fleet[vi]
        self.serving.remove(victim)
        self.route.leave(vi)
        self.res.scale_ins.append(now)
        if self.request:
            victim.state = "draining"
            if victim.server is not None and not victim.server.queue:
                self.retire(vi, now)
            return
        self.win.dropped[self.window(now)] += len(victim.members)
        for sid in victim.members:
            self.sessions[sid] = -1
        victim.members.clear()
        victim.sessions = 0
        self.retire(vi, now)

    def on_turn(self, now: float, event: Turn) -> None:
        ii = self.sessions[event.session]
        if ii < 0:
            return
        assert self.latency is not None
        ms, over = self.latency.draw(self.fleet[ii].sessions, self.normal())
        w = self.window(now)
        self.win.latencies[w].append(ms)
        self.win.served[w] += 1
        self.win.over_curve[w] += over
        gap = self.rng.exponential(self.setup.turn_interval_s)
        if now + gap < event.ends_ms / 1000.0:
            self.push(now + gap, Turn(event.session, event.ends_ms))

    def on_session_end(self, sid: int) -> None:
        ii = self.sessions[sid]
        if ii >= 0:
            inst = self.fleet[ii]
            inst.sessions -= 1
            inst.members.discard(sid)
            self.route.update(ii, inst.sessions)
            self.sessions[sid] = -1

    def finish(self) -> None:
        """The trace is over: what is still queued counts as infinitely late; every instance is billed.

        A run a watch stopped bills to that moment and leaves what is queued out (its fate is unknown).
        """
        stopped = self.res.settled_at_s
        for i, inst in enumerate(self.fleet):
            if inst.state != "gone":
                if inst.server is not None and stopped is None:
                    self.res.unfinished += len(inst.server.queue)
                    for arrived in inst.server.queue:
                        self.win.latencies[self.window(arrived)].append(math.inf)
                self.retire(i, self.end_t if stopped is None else stopped)


def simulate(setup: Setup, watch: Watch | None = None) -> Result:
    """Run the fleet of `setup` through its trace (or until `watch` says stop)."""
    return FleetSimulation(setup).run(watch)
