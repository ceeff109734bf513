"""The fleet simulation's event loop (discrete events, seeded): arrivals, routing, instances, the autoscaler.

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
from dataclasses import dataclass, field

import numpy as np

from bidi_tts.fleet_plan import Curve, Load, Policy
from bidi_tts_loadtest.fleet.autoscaler import Autoscaler
from bidi_tts_loadtest.fleet.instance import FlowServer, SessionLatency, overhead_s, throughput_table, work_draws
from bidi_tts_loadtest.fleet.traces import Trace, arrivals, request_rates, session_rates

#: After the trace ends, requests still queued get this long to finish; what is left counts as infinitely late.
DRAIN_LIMIT_S = 3600.0
_DONE, _TICK, _READY, _TURN, _END = range(5)


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


def simulate(setup: Setup) -> Result:
    rng = np.random.default_rng(setup.seed)
    nwin = max(1, math.ceil(setup.trace.duration_s / setup.window_s))
    win = Windows([[] for _ in range(nwin)], [0] * nwin, [0] * nwin, [0] * nwin, [0] * nwin, [0] * nwin,
                  [0] * nwin, [0] * nwin)
    request = setup.load == "request"
    bound = setup.queue_bound if setup.queue_bound is not None else math.inf
    x = throughput_table(setup.curve, int(min(bound, 100_000))) if request else None
    delay_ms = overhead_s(setup.curve) * 1000 if request else 0.0
    latency = None if request else SessionLatency(setup.curve)
    end_t = setup.trace.duration_s
    if request:
        times = arrivals(request_rates(setup.trace), rng)
        works = work_draws(setup.curve, len(times), rng)
    else:
        start_n = rng.poisson(setup.trace.at(0.0))
        times = np.concatenate([np.zeros(start_n), arrivals(session_rates(setup.trace, setup.session_mean_s), rng)])
        works = rng.exponential(setup.session_mean_s, len(times))  # session durations
    normals = iter(rng.standard_normal(1 << 16).tolist())

    fleet: list[_Instance] = [_Instance(x, 0.0, "serving") for _ in range(setup.policy.min_instances)]
    serving = list(fleet)
    scaler = Autoscaler(setup.policy)
    heap: list[tuple[float, int, int, int, int]] = []
    seq = 0
    res = Result(win, [], 0.0, 0, 0)
    sessions: list[int] = []   # session id -> instance index (-1: ended or dropped)

    def push(t: float, kind: int, a: int, b: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (t, seq, kind, a, b))

    def widx(t: float) -> int:
        return min(int(t / setup.window_s), nwin - 1)

    def normal() -> float:
        nonlocal normals
        try:
            return next(normals)
        except StopIteration:
            normals = iter(rng.standard_normal(1 << 16).tolist())
            return next(normals)

    def retire(i: int, now: float) -> None:
        inst = fleet[i]
        inst.state = "gone"
        res.instance_s += max(0.0, min(now, end_t) - inst.born)

    push(setup.sample_s, _TICK, 0, 0)
    index = {id(inst): i for i, inst in enumerate(fleet)}
    i_arr, n_arr = 0, len(times)
    times_l = times.tolist()
    works_l = works.tolist()
    now = 0.0
    while True:
        next_arr = times_l[i_arr] if i_arr < n_arr else math.inf
        if heap and heap[0][0] <= next_arr:
            now, _, kind, a, b = heapq.heappop(heap)
            if now > end_t + DRAIN_LIMIT_S or (now > end_t and not request):
                break
            res.events += 1
            if kind == _DONE:
                inst = fleet[a]
                srv = inst.server
                if srv is None or b != srv.version:
                    continue   # superseded by a later arrival's reschedule
                arrived = srv.complete(now, inst.works)
                w = widx(arrived)
                win.latencies[w].append((now - arrived) * 1000.0 + delay_ms)
                win.served[w] += 1
                if srv.queue:
                    push(srv.due(), _DONE, a, srv.version)
                elif inst.state == "draining":
                    retire(a, now)
            elif kind == _TICK:
                if now > end_t + 1e-9:
                    continue
                starting = sum(1 for f in fleet if f.state == "starting")
                total = sum(f.outstanding() for f in serving)
                metric = total / len(serving) if serving else (math.inf if total else 0.0)
                d = scaler.observe(now, metric, len(serving), starting)
                if scaler.datapoints and scaler.datapoints[-1][0] == now:
                    res.samples.append((now, len(serving), starting, scaler.datapoints[-1][1]))
                    res.per_instance.append((now, [f.outstanding() for f in serving]))
                for _ in range(d.add):
                    fleet.append(_Instance(x, now, "starting"))
                    index[id(fleet[-1])] = len(fleet) - 1
                    push(now + setup.scale_out_s, _READY, len(fleet) - 1, 0)
                if d.add:
                    res.scale_outs.append((now, d.add))
                if d.remove and serving:
                    victim = min(serving, key=lambda f: f.outstanding())
                    serving.remove(victim)
                    vi = index[id(victim)]
                    res.scale_ins.append(now)
                    if request:
                        victim.state = "draining"
                        if victim.server is not None and not victim.server.queue:
                            retire(vi, now)
                    else:
                        win.dropped[widx(now)] += len(victim.members)
                        for sid in victim.members:
                            sessions[sid] = -1
                        victim.members.clear()
                        victim.sessions = 0
                        retire(vi, now)
                w = widx(now - 1e-9)
                win.in_service[w] = len(serving)
                win.starting[w] = starting + d.add
                push(now + setup.sample_s, _TICK, 0, 0)
            elif kind == _READY:
                fleet[a].state = "serving"
                serving.append(fleet[a])
            elif kind == _TURN:
                ii = sessions[a]
                if ii < 0:
                    continue
                assert latency is not None
                inst = fleet[ii]
                ms, over = latency.draw(inst.sessions, normal())
                w = widx(now)
                win.latencies[w].append(ms)
                win.served[w] += 1
                win.over_curve[w] += over
                gap = rng.exponential(setup.turn_interval_s)
                if now + gap < b / 1000.0:
                    push(now + gap, _TURN, a, b)
            elif kind == _END:
                ii = sessions[a]
                if ii >= 0:
                    inst = fleet[ii]
                    inst.sessions -= 1
                    inst.members.discard(a)
                    sessions[a] = -1
            continue
        if i_arr >= n_arr:
            break
        # an arrival
        now = next_arr
        work = works_l[i_arr]
        i_arr += 1
        res.events += 1
        w = widx(now)
        win.arrived[w] += 1
        if not serving:
            win.refused[w] += 1
            if not request:
                sessions.append(-1)
            continue
        target = min(serving, key=_Instance.outstanding)
        if target.outstanding() >= bound:
            win.refused[w] += 1
            if not request:
                sessions.append(-1)
            continue
        ti = index[id(target)]
        if request:
            srv = target.server
            assert srv is not None
            due = srv.admit(now, work, target.works)
            push(due, _DONE, ti, srv.version)
        else:
            sid = len(sessions)
            sessions.append(ti)
            target.sessions += 1
            target.members.add(sid)
            ends = now + work
            push(ends, _END, sid, 0)
            # the session opens with a turn; b carries its end in ms so turns stop with it
            push(now, _TURN, sid, int(ends * 1000.0))
    for i, inst in enumerate(fleet):
        if inst.state != "gone":
            if inst.server is not None:
                res.unfinished += len(inst.server.queue)
                for arrived in inst.server.queue:
                    win.latencies[widx(arrived)].append(math.inf)
            retire(i, end_t)
    return res
