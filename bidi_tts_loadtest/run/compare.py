"""Two or more load-run summaries side by side: ``bidi-tts-load --compare A.json B.json ...``.

(also ``python -m bidi_tts_loadtest.compare``). One column per summary (``--summary-json`` files),
the settings that differ between them first, then the numbers; each later column shows its change
from the first (the baseline). ``--json OUT`` writes the same table as data. Bad input (fewer than
two files, a missing file, a file that is not a summary, an unknown option) is one line and exit 4.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bidi_tts_loadtest.core.exit_codes import OK, USAGE

PROG = "bidi-tts-load --compare"
USAGE_LINE = f"usage: {PROG} A.json B.json ... [--json OUT]"

#: (label, path into the summary, True when lower is better) for the numbers compared.
METRICS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("sessions", ("sessions",), False),
    ("messages", ("messages",), False),
    ("errors", ("errors",), True),
    ("error rate", ("error_rate",), True),
    ("underruns", ("underruns",), True),
    ("TTFA p50 ms", ("ttfa_ms", "p50"), True),
    ("TTFA p95 ms", ("ttfa_ms", "p95"), True),
    ("TTFA p99 ms", ("ttfa_ms", "p99"), True),
    ("TTFA audible p95 ms", ("ttfa_audible_ms", "p95"), True),
    ("complete p95 ms", ("complete_ms", "p95"), True),
    ("frame gap p95 ms", ("gap_ms", "p95"), True),
    ("goodput", ("goodput",), False),
    ("SLO passed", ("slo_passed",), False),
)
SETTINGS = ("host", "endpoint_name", "users", "spawn_rate", "run_time_s", "shape", "voice", "tokens_per_second",
            "turns_per_session", "started_at", "duration_s")


class UsageError(Exception):
    """Bad arguments or files; the message is one line."""


def parse_args(argv: Sequence[str]) -> tuple[list[Path], Path | None]:
    files: list[Path] = []
    out: Path | None = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--json":
            if not args:
                raise UsageError(f"--json needs a file name ({USAGE_LINE})")
            out = Path(args.pop(0))
        elif arg.startswith("--json="):
            out = Path(arg.split("=", 1)[1])
        elif arg.startswith("-"):
            raise UsageError(f"unknown option {arg} ({USAGE_LINE})")
        else:
            files.append(Path(arg))
    if len(files) < 2:
        raise UsageError(f"give two or more summary files ({USAGE_LINE})")
    return files, out


def load_summary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a JSON summary ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not {"sessions", "messages", "ttfa_ms"} <= data.keys():
        raise UsageError(f"{path}: not a load-test summary (no sessions/messages/ttfa_ms; write one with "
                         "--summary-json)")
    return data


def _get(summary: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = summary
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1 else f"{value:.1f}"
    return str(value)


def change(base: Any, value: Any, lower_is_better: bool) -> str:
    """The change from the baseline: +12.5% (worse) / -3.0% (better); '' when it cannot be said."""
    if isinstance(base, bool) or isinstance(value, bool) or not isinstance(base, int | float) \
            or not isinstance(value, int | float) or base == value:
        return ""
    if base == 0:
        return " (new)"
    pct = (value - base) / abs(base) * 100
    worse = pct > 0 if lower_is_better else pct < 0
    return f" ({pct:+.1f}% {'worse' if worse else 'better'})"


def compare(summaries: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The table as data: settings that differ, and every metric per summary."""
    labels = [label for label, _ in summaries]
    settings = {key: [s.get("settings", {}).get(key) for _, s in summaries] for key in SETTINGS}
    differing = {k: v for k, v in settings.items() if len({json.dumps(x) for x in v}) > 1 or k == "host"}
    metrics = {label: [_get(s, path) for _, s in summaries] for label, path, _ in METRICS}
    return {"labels": labels, "settings": differing, "metrics": metrics}


def table_lines(summaries: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    data = compare(summaries)
    lower = {label: low for label, _, low in METRICS}
    rows: list[list[str]] = [["", *data["labels"]]]
    rows += [[f"{key} (setting)", *(_show(v) for v in values)] for key, values in data["settings"].items()]
    for label, values in data["metrics"].items():
        if all(v is None for v in values):
            continue
        rows.append([label, _show(values[0]), *(_show(v) + change(values[0], v, lower[label]) for v in values[1:])])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def labels_for(files: Sequence[Path]) -> list[str]:
    """File names, or parent/name where two names are the same."""
    names = [f.name for f in files]
    return [f"{f.parent.name}/{f.name}" if names.count(f.name) > 1 else f.name for f in files]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE_LINE)
        print(__doc__.split("\n\n", 1)[1].strip())
        return OK
    try:
        files, out = parse_args(args)
        summaries = list(zip(labels_for(files), (load_summary(f) for f in files), strict=True))
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return USAGE
    print("\n".join(table_lines(summaries)))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(compare(summaries), indent=2) + "\n", encoding="utf-8")
    return OK


if __name__ == "__main__":
    raise SystemExit(main())
