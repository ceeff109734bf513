"""The simulation's router picks what a scan of the instances in service picks: fewest outstanding, earliest in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bidi_tts_loadtest.fleet.routing import LeastOutstanding

# an operation: (kind, instance slot, count); kinds 0 join, 1 leave, 2 update
OPS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 7), st.integers(0, 5)), max_size=300)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_the_heap_picks_what_a_scan_of_the_serving_list_picks(ops: list[tuple[int, int, int]]) -> None:
    route = LeastOutstanding()
    serving: list[int] = []  # in the order of entering service, as the engine keeps it
    count = [0] * 8
    known: set[int] = set()  # the engine updates only instances that entered service once
    for kind, i, c in ops:
        if kind == 0 and i not in serving:
            serving.append(i)
            known.add(i)
            count[i] = c
            route.join(i, c)
        elif kind == 1 and i in serving:
            serving.remove(i)
            route.leave(i)
        elif kind == 2 and i in known:
            count[i] = c
            route.update(i, c)
        expected = min(serving, key=lambda j: count[j]) if serving else None
        assert route.least() == expected


def test_stale_entries_do_not_pile_up() -> None:
    route = LeastOutstanding()
    route.join(0, 0)
    route.join(1, 100)
    for c in range(10_000):
        route.update(1, 100 + c % 7)  # never the least, so never popped: compaction has to drop them
    assert route.least() == 0 and len(route._heap) <= 4 * 2 + 64 + 1
