"""bench/chunker_sse/bench_core.py and bench/chunker_sse/bench_sse.py: rows from either benchmark make one table
with ratios."""

from __future__ import annotations

import sys
import types

import pytest

from bench.chunker_sse import bench_core, bench_sse


def test_bench_sse_rows_are_measured_and_complete() -> None:
    rows = bench_sse.run(sizes=(2_000, 20_000), fragment=8, repeats=1)
    assert {r["workload"] for r in rows} == set(bench_sse.WORKLOADS)
    for r in rows:
        assert r["component"] == "SSEDecoder" and r["median_s"] > 0 and r["mb_per_s"] > 0
        assert r["size_bytes"] in (2_000, 20_000) and r["fragment"] == 8
    long_rows = [r for r in rows if r["workload"] == "one long event"]
    assert [r["items"] for r in long_rows] == [1, 1]  # the whole long event, dispatched once


def test_workloads_have_the_requested_size() -> None:
    for make in bench_sse.WORKLOADS.values():
        assert len(make(100_000)) == 100_000


def test_rows_with_other_key_names_are_normalised_and_get_a_ratio() -> None:
    rows = [
        bench_core.normalise({"name": "chunker", "impl": "ours", "size_chars": 100_000, "seconds": 0.1}, "x"),
        bench_core.normalise({"name": "chunker", "impl": "ours", "size_chars": 10**6, "seconds": 1.2}, "x"),
        bench_core.normalise({"impl": "seed regex", "size": 100_000, "median_s": 0.1}, "chunker"),
        bench_core.normalise({"impl": "seed regex", "size": 1_000_000, "median_s": 9.0}, "chunker"),
    ]
    table = bench_core.with_ratios(rows)
    ratios = {(r["component"], r["workload"], r["size"]): r["ratio"] for r in table}
    assert ratios[("chunker", "ours", 1_000_000)] == pytest.approx(12.0)
    assert ratios[("chunker", "seed regex", 1_000_000)] == pytest.approx(90.0)
    assert ratios[("chunker", "ours", 100_000)] is None
    assert table[0]["MB/s"] == pytest.approx(1.0)


def test_collect_includes_a_chunker_benchmark_when_present(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = types.ModuleType("bench_chunker")

    def run(sizes: tuple[int, ...] = (100_000, 1_000_000), fragment: int = 8) -> list[dict[str, object]]:
        return [{"component": "chunker", "workload": "ours", "size": s, "median_s": s / 1e6} for s in sizes]

    fake.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench_chunker", fake)
    rows = bench_core.collect([1_000, 10_000], fragment=8, repeats=1)
    assert {r["component"] for r in rows} == {"chunker", "SSEDecoder"}
    bench_core.print_table(rows)
    out = capsys.readouterr().out
    assert "chunker" in out and "SSEDecoder" in out and "10.00" in out
