"""Heard, not just sent: first byte, first audible sample and underruns per text, for one container.

Runs, against a container that is already up (``--container-url``):

- ``loadtest.browser_ttfa`` in headless Chromium, binary WebSocket shape, for three texts: the
  default two-sentence text, a four-sentence block of about 270 characters (the shape of the AWS
  post's benchmark), and that block as an LLM-paced turn at 40 tokens/s;
- the Locust load test at one session (``--summary-json``: ``ttfa_ms``, ``ttfa_audible_ms``,
  underruns).

Then prints one markdown table (the one in docs/browser.md). Run it once against the old container
and once against the new, on a quiet machine::

    uv run python bench/container/heard.py --container-url http://127.0.0.1:8080 --label after
    uv run python bench/container/heard.py --table reports/heard/before reports/heard/after

``--messages`` and ``--run-time`` shorten a smoke run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BLOCK = (
    "Thanks for calling. I checked your account, and I can see two orders placed this week, one on "
    "Monday and one on Wednesday. The first one has already shipped and should arrive tomorrow before "
    "noon. The second is still being packed, and I will email you its tracking number tonight."
)
TEXTS: dict[str, list[str]] = {
    "default text": [],
    "4-sentence block": ["--text", BLOCK],
    "block as a turn, 40 tokens/s": ["--text", BLOCK, "--tokens-per-second", "40"],
}


def _run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, check=False)
    if done.returncode not in (0, 1):  # 1: a message failed; the JSON still says which
        raise SystemExit(f"heard: {cmd[2]} exited {done.returncode}")


def measure(url: str, out: Path, messages: int, run_time: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    for index, (name, extra) in enumerate(TEXTS.items()):
        _run([py, "-m", "bidi_tts_loadtest.browser_ttfa", "--container-url", url, "--shapes", "ws",
              "--messages", str(messages), "--json", str(out / f"browser-{index}.json"), *extra])
        (out / f"browser-{index}.name").write_text(name + "\n", encoding="utf-8")
    _run([py, "-m", "locust", "-f", str(Path(__file__).resolve().parents[2] / "loadtest" / "locustfile.py"),
          "--headless", "-u", "1", "-r", "1", "--run-time", run_time, "--host", url, "--only-summary",
          "--summary-json", str(out / "locust-1.json")])


def _ms(stats: dict[str, Any] | None) -> str:
    value = None if not stats else stats.get("p50")
    return "-" if value is None else f"{value:.0f}"


def rows(folder: Path) -> list[str]:
    label = folder.name
    out = []
    for path in sorted(folder.glob("browser-*.json")):
        name = path.with_suffix(".name").read_text(encoding="utf-8").strip()
        ws = json.loads(path.read_text(encoding="utf-8"))["shapes"]["ws"]
        out.append(f"| {label} | browser, {name} | {_ms(ws['ttfb_ms'])} | {_ms(ws['first_audible_ms'])} | "
                   f"{ws['messages_with_underruns']} of {ws['messages']} |")
    locust = folder / "locust-1.json"
    if locust.exists():
        s = json.loads(locust.read_text(encoding="utf-8"))
        out.append(f"| {label} | load test, 1 session, LLM turns | {_ms(s['ttfa_ms'])} | "
                   f"{_ms(s.get('ttfa_audible_ms'))} | {s['underruns']} in {s['messages']} messages |")
    return out


def table(folders: list[Path]) -> str:
    head = ["| container | measurement | first byte p50 ms | first audible p50 ms | underruns |",
            "|---|---|---|---|---|"]
    return "\n".join(head + [row for folder in folders for row in rows(folder)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--container-url", help="measure this running container")
    parser.add_argument("--label", default="after", help="folder name under reports/heard (default after)")
    parser.add_argument("--messages", type=int, default=10, help="browser messages per text (default 10)")
    parser.add_argument("--run-time", default="120s", help="length of the load test (default 120s)")
    parser.add_argument("--table", nargs="+", type=Path, metavar="FOLDER", help="only print the table of these")
    args = parser.parse_args()
    if args.table:
        missing = [str(f) for f in args.table if not f.is_dir()]
        if missing:
            parser.error(f"no such folder: {', '.join(missing)}")
        print(table(args.table))
        return
    if not args.container_url or not args.container_url.startswith(("http://", "https://")):
        parser.error("--container-url http://HOST:PORT is required (or --table FOLDER ...)")
    folder = Path("reports/heard") / args.label
    measure(args.container_url, folder, args.messages, args.run_time)
    print(table([folder]))


if __name__ == "__main__":
    main()
