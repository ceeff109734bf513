"""One table for the protocol core's throughput: the sentence chunker and the SSE decoder.

    uv run python bench/chunker_sse/bench_core.py [--sizes 100000,1000000] [--fragment 8] [--repeats 3] [--json OUT]

Rows come from ``bench/chunker_sse/bench_chunker.py``'s ``run()`` (when that file exists) and
``bench/chunker_sse/bench_sse.py``'s ``run()``, both called as ``run(sizes=..., fragment=...)``. The last column
is the linear-scaling ratio: time at the largest size over time at the smallest. With sizes of
100 KB and 1 MB a linear implementation shows about 10; a re-scanning one shows about 100.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Runnable both as `python bench/chunker_sse/bench_core.py` and as `python -m bench.chunker_sse.bench_core`.
sys.path.insert(0, str(Path(__file__).resolve().parent))

COLUMNS = ("component", "workload", "size", "fragment", "median_s", "MB/s", "ratio")


def _first(row: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if row.get(key) is not None:
            return row[key]
    return None


def normalise(row: dict[str, Any], default_component: str) -> dict[str, Any]:
    """Map a row of either benchmark to the table's fields (tolerating each file's own key names)."""
    size = _first(row, "size_bytes", "size", "bytes", "size_chars", "chars")
    seconds = _first(row, "median_s", "seconds", "time_s", "elapsed_s")
    rate = _first(row, "mb_per_s", "MB/s")
    if rate is None and size and seconds:
        rate = size / seconds / 1e6
    return {
        "component": str(_first(row, "component", "bench", "name") or default_component),
        "workload": str(_first(row, "workload", "impl", "variant", "case") or ""),
        "size": size,
        "fragment": _first(row, "fragment", "fragment_size"),
        "median_s": seconds,
        "MB/s": rate,
    }


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add ``ratio``: each (component, workload)'s time at its largest size over its smallest."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["component"], row["workload"]), []).append(row)
    for group in groups.values():
        timed = [r for r in group if r["size"] and r["median_s"]]
        ratio = None
        if len(timed) >= 2:
            small, large = min(timed, key=lambda r: r["size"]), max(timed, key=lambda r: r["size"])
            ratio = large["median_s"] / small["median_s"]
        for r in group:
            r["ratio"] = ratio if r["size"] == max((t["size"] for t in timed), default=None) else None
    return rows


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "size":
        return f"{value / 1e6:g} MB" if value >= 1_000_000 else f"{value / 1e3:g} KB"
    if key == "median_s":
        return f"{value:.4f}"
    if key in ("MB/s", "ratio"):
        return f"{value:.2f}"
    return str(value)


def print_table(rows: Sequence[dict[str, Any]], default_component: str = "?") -> None:
    """Print rows (raw from a benchmark's run() or already normalised) as one aligned table."""
    table = with_ratios([dict(r) if "MB/s" in r else normalise(r, default_component) for r in rows])
    cells = [[_cell(k, r.get(k)) for k in COLUMNS] for r in table]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(COLUMNS)]
    print("  ".join(h.ljust(w) for h, w in zip(COLUMNS, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)))
    print("ratio = median time at the largest size / at the smallest; ~10 for 10x the input is linear.")


def collect(sizes: Sequence[int], fragment: int, repeats: int) -> list[dict[str, Any]]:
    """Run every available benchmark and return normalised rows."""
    rows: list[dict[str, Any]] = []
    for module_name, component in (("bench_chunker", "chunker"), ("bench_sse", "SSEDecoder")):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            print(f"({module_name}.py not found; its rows are left out)", file=sys.stderr)
            continue
        try:
            raw = module.run(sizes=tuple(sizes), fragment=fragment, repeats=repeats)
        except TypeError:  # a run() without a repeats parameter
            raw = module.run(sizes=tuple(sizes), fragment=fragment)
        rows.extend(normalise(r, component) for r in raw)
    return with_ratios(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated input sizes in bytes")
    parser.add_argument("--fragment", type=int, default=8, help="bytes (or characters) per feed() call")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement; the median is shown")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows = collect(sizes, args.fragment, args.repeats)
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
