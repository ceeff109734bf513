"""A ladder rung's arithmetic and its usability rules, on made-up samples (no clock, no container)."""

from __future__ import annotations

import pytest

from bidi_tts_loadtest.ladder.rung import Collected, Sample, concurrency_mean, rung, stats_ms


def served(sent: float, service: float, *, gap: float | None = 0.0, scheduled: float | None = None,
           **extra: object) -> Sample:
    return Sample(sent_at=sent, first_at=sent + service, done_at=sent + service, gap_s=gap, scheduled_at=scheduled,
                  chars=25, audio_s=1.0, **extra)  # type: ignore[arg-type]


def closed(level: int, samples: list[Sample], *, measure_s: float = 10.0) -> Collected:
    c = Collected("closed", level, 0.0, 10.0, measure_s, 11.0, samples=samples, spans=samples)
    return c


def back_to_back(clients: int, service: float, gap: float = 0.0) -> list[Sample]:
    """`clients` clients, each one request in flight, `gap` seconds of client time between them."""
    out = []
    cycle = service + gap
    for _ in range(clients):
        out += [served(k * cycle, service, gap=gap) for k in range(int(10.0 / cycle + 1e-9) + 1)]  # one past the end
    return out


def judge(c: Collected, slo_ms: float = 1000.0, load: str = "request") -> dict:
    return rung(c, run=1, unit="clients", slo_ms=slo_ms, load=load)


def test_stats_are_exact_percentiles_in_ms() -> None:
    s = stats_ms([0.1, 0.2, 0.3, 0.4])
    assert s["mean"] == pytest.approx(250) and s["p50"] == pytest.approx(250) and s["max"] == pytest.approx(400)
    assert s["p95"] == pytest.approx(385)
    assert stats_ms([]) == dict.fromkeys(("mean", "p50", "p90", "p95", "p99", "max"))


def test_concurrency_is_the_time_average_in_the_window() -> None:
    spans = [Sample(0.0, done_at=5.0), Sample(2.0, done_at=None), Sample(20.0, done_at=21.0)]
    # window [0, 10): the first open 5 s, the second 8 s (still open, counted to now=12); the third after.
    assert concurrency_mean(spans, 0.0, 10.0, now=12.0) == pytest.approx(1.3)


def test_a_clean_closed_rung_is_usable_and_judged_on_p95() -> None:
    r = judge(closed(2, back_to_back(2, 0.1)), slo_ms=150)
    assert r["usable"] and r["unusable_reason"] is None
    assert r["concurrency_mean"] == pytest.approx(2.0, rel=0.02)
    assert r["achieved_rps"] == pytest.approx(20.0, rel=0.02) and r["completed"] == 200
    assert r["meets_slo"] and r["ttfa_ms"]["p95"] == pytest.approx(100)
    assert not judge(closed(2, back_to_back(2, 0.1)), slo_ms=90)["meets_slo"]


def test_only_the_measured_window_counts() -> None:
    c = closed(1, back_to_back(1, 0.1), measure_s=2.0)  # window [8, 10)
    assert judge(c)["completed"] == 20


def test_a_client_that_keeps_too_few_in_flight_is_the_limit() -> None:
    # 4 clients, but only 3 were ever sending: 3 in flight on average, under 0.95 x 4.
    r = judge(closed(4, back_to_back(3, 0.1)))
    assert not r["usable"] and "client the limit: 3.00 in flight on average" in r["unusable_reason"]


def stalling(clients: int, service: float, stall: float, every: int = 10) -> list[Sample]:
    """Back to back, but every `every`-th send comes `stall` seconds after the response before it."""
    out = []
    for _ in range(clients):
        t, k = 0.0, 0
        while t < 10.5:
            gap = stall if k % every == every - 1 else 0.0
            t += gap
            out.append(served(t, service, gap=gap))
            t += service
            k += 1
    return out


def test_a_client_that_stalls_between_response_and_next_send_is_the_limit() -> None:
    # 1 s requests; every 10th send stalls 100 ms: the mean in flight stays at 0.99 N (the 0.95 N rule
    # passes it), the p95 of the client's own time (100 ms, over 5% of the 1 s service) does not.
    r = judge(closed(2, stalling(2, 1.0, 0.1)))
    assert r["concurrency_mean"] > 0.95 * 2
    assert not r["usable"] and r["unusable_reason"] == (
        "client the limit: p95 100.0 ms between a response and the next send (over 50.0)")
    # A 5 ms stall on 10 ms requests is under the 10 ms floor, though over 5% of the service: usable.
    assert judge(closed(2, stalling(2, 0.01, 0.005, every=40)))["usable"]


def test_errors_and_refusals_are_counted_and_make_the_rung_unusable() -> None:
    samples = back_to_back(1, 0.1)
    samples[-2].error, samples[-2].first_at = "http 500", None
    samples[-3].error, samples[-3].refused, samples[-3].first_at = "http 503", True, None
    r = judge(closed(1, samples))
    assert (r["errors"], r["refused"]) == (1, 1)
    assert not r["usable"] and "1 errors, 1 refused" in r["unusable_reason"]


def test_no_first_byte_by_the_end_counts_at_its_age_when_older_than_the_slo() -> None:
    samples = back_to_back(1, 0.1)  # 100 requests in the window [0, 10); the drain ends at 11
    for s in samples[80:90]:  # 10 of them never answered: 2-3 s old at the end, over a 1 s SLO
        s.first_at = s.done_at = None
    r = judge(closed(1, samples), slo_ms=1000)
    assert r["unfinished"] == 10 and r["usable"] and not r["meets_slo"]
    assert r["ttfa_ms"]["p95"] > 1000
    assert judge(closed(1, samples), slo_ms=5000)["unusable_reason"] == (
        "10 without a first byte after a 1.0 s drain, younger than the SLO: lengthen --drain-s")


def test_throughput_is_what_finished_in_the_window() -> None:
    samples = back_to_back(1, 0.1)
    for s in samples[50:]:  # sent in the window, finished after it: not throughput of the window
        s.done_at = s.first_at = 10.5
    assert judge(closed(1, samples), slo_ms=10_000)["achieved_rps"] == pytest.approx(5.0)


def test_open_loop_lag_and_unsent_arrivals_make_it_unusable() -> None:
    on_time = [served(8.0 + i * 0.1, 0.05, gap=None, scheduled=8.0 + i * 0.1 - 0.001) for i in range(20)]
    c = Collected("open", 10.0, 0.0, 10.0, 2.0, 11.0, samples=on_time, spans=on_time, scheduled=20)
    r = rung(c, run=1, unit="requests_per_s", slo_ms=1000, load="request")
    assert r["usable"] and r["client_lag_ms_p95"] == pytest.approx(1.0) and r["offered_rps"] == 10.0
    late = [served(8.0 + i * 0.1, 0.05, gap=None, scheduled=8.0 + i * 0.1 - 0.05) for i in range(20)]
    c = Collected("open", 10.0, 0.0, 10.0, 2.0, 11.0, samples=late, spans=late)
    r = rung(c, run=1, unit="requests_per_s", slo_ms=1000, load="request")
    assert not r["usable"] and "p95 lag 50.0 ms (over 20)" in r["unusable_reason"]
    c = Collected("open", 10.0, 0.0, 10.0, 2.0, 11.0, samples=on_time, spans=on_time, unsent=3)
    r = rung(c, run=1, unit="requests_per_s", slo_ms=1000, load="request")
    assert not r["usable"] and "3 never sent" in r["unusable_reason"]


def test_a_session_rung_with_an_underrun_misses_the_slo() -> None:
    samples = back_to_back(1, 0.1)
    assert judge(closed(1, samples), load="session")["meets_slo"]
    samples[-2].underruns = 1
    r = judge(closed(1, samples), load="session")
    assert r["underruns"] == 1 and not r["meets_slo"] and r["usable"]
    assert judge(closed(1, samples), load="request")["meets_slo"]  # a request ladder does not judge playback
