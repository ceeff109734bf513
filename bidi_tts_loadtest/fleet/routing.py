"""Least outstanding requests in O(log n): which instance in service gets the next request.

The fleet simulation routes every arrival to the instance in service with the fewest outstanding
requests (sessions, under session load), the earliest to have entered service among equals: what
``min(serving, key=outstanding)`` over the list of instances in service, in the order they entered it,
returns. Scanning that list on every arrival cost the simulation most of its time at a few hundred
instances (docs/capacity.md, "The plan checks itself"); this keeps a heap of (count, entry order,
instance) instead, its stale entries dropped when they reach the top, and gives the same answer.
"""

from __future__ import annotations

import heapq


class LeastOutstanding:
    """The instances in service, by (outstanding count, order of entering service)."""

    __slots__ = ("_count", "_entered", "_heap", "_live", "_order")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, int]] = []  # (count, order, instance); stale when either changed
        self._order: list[int] = []   # per instance: its order of entering service, -1 out of service
        self._count: list[int] = []   # per instance: its outstanding count
        self._entered = 0
        self._live = 0

    def join(self, instance: int, count: int) -> None:
        """`instance` enters service with `count` outstanding."""
        while len(self._order) <= instance:
            self._order.append(-1)
            self._count.append(0)
        self._order[instance] = self._entered
        self._entered += 1
        self._live += 1
        self._count[instance] = count
        heapq.heappush(self._heap, (count, self._order[instance], instance))

    def leave(self, instance: int) -> None:
        """`instance` leaves service (its heap entries go stale)."""
        self._order[instance] = -1
        self._live -= 1

    def update(self, instance: int, count: int) -> None:
        """`instance` (one that has joined) has `count` outstanding now, in service or draining."""
        self._count[instance] = count
        order = self._order[instance]
        if order >= 0:
            heap = self._heap
            heapq.heappush(heap, (count, order, instance))
            if len(heap) > 4 * self._live + 64:
                self._compact()

    def least(self) -> int | None:
        """The instance in service with the fewest outstanding, the earliest to enter among equals; None: none."""
        heap, order, count = self._heap, self._order, self._count
        while heap:
            c, o, i = heap[0]
            if order[i] == o and count[i] == c:
                return i
            heapq.heappop(heap)
        return None

    def _compact(self) -> None:
        self._heap = [(self._count[i], o, i) for i, o in enumerate(self._order) if o >= 0]
        heapq.heapify(self._heap)
