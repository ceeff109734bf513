"""The outside check: AWS's Voxtral relay in front of the reference container's vLLM-Omni route.

    PYTHONPATH=. python bench/container/voxtral_relay.py /work/outside/voxtral/app.py [--pythonpath DIR] [--hold S]

APP_PY is aws-samples/sagemaker-genai-hosting-examples, 01-models/mistral/Voxtral-4B-TTS-2603/
voxtral-tts-4B-docker-artifacts/app.py, kept outside this tree. It reads no environment: its upstream is
hard-coded (VLLM_BASE_URL http://localhost:8081, VLLM_TTS_STREAM_WS_URL ws://localhost:8081/...) and
main() binds 0.0.0.0:8080. So the relay is imported from APP_PY in a child process, those module
constants are pointed at the reference container (started here on a free 127.0.0.1 port; default
backend `timed`, profile h200-eager: the protocol through the real scheduler, synthesis simulated), and
uvicorn serves its app on 127.0.0.1. It needs fastapi, httpx and websockets: fastapi is not among the
project's dependencies (--pythonpath DIR adds a folder holding it).

Then: one smoke session through the relay (session.config, input.text, input.done as BINARY frames, as
SageMaker delivers them), and the suite through it when the suite takes --dialect; otherwise the command
to run it is printed. Exit: 0 smoke (and suite) passed, 1 failed, 4 usage, 69 relay or container never
ready.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from websockets.sync.client import connect

from bidi_tts import exit_codes
from bidi_tts.local_container import LocalContainer, free_port
from bidi_tts.protocol import WS_PATH

LAUNCH = """
import importlib.util, sys, uvicorn
path, upstream, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = importlib.util.spec_from_file_location("voxtral_relay_app", path)
relay = importlib.util.module_from_spec(spec)
spec.loader.exec_module(relay)
relay.VLLM_BASE_URL = upstream
relay.VLLM_HEALTH_URL = upstream + "/health"
relay.VLLM_TTS_URL = upstream + "/v1/audio/speech"
relay.VLLM_TTS_STREAM_WS_URL = upstream.replace("http://", "ws://") + "/v1/audio/speech/stream"
uvicorn.run(relay.app, host="127.0.0.1", port=port, log_level="warning")
"""
READY_S = 120.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app_py", type=Path, help="the Voxtral relay's app.py (outside this tree)")
    parser.add_argument("--pythonpath", type=Path, help="a folder with the relay's fastapi, for its process")
    parser.add_argument("--container-args", default="--backend timed --timed-profile h200-eager",
                        help="options for python -m reference_container (default: %(default)s)")
    parser.add_argument("--hold", type=float, default=0.0, help="keep both running S seconds at the end")
    parser.add_argument("--report", type=Path, default=Path("reports/voxtral-relay.json"),
                        help="the suite's JSON report (default reports/voxtral-relay.json)")
    parser.add_argument("--no-suite", action="store_true", help="only the smoke session")
    return parser.parse_args(argv)


def relay_env(extra: Path | None) -> dict[str, str]:
    paths = [str(extra)] if extra else []
    paths += [p for p in (os.environ.get("PYTHONPATH") or "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def wait_ping(url: str, alive: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline and alive.poll() is None:
        try:
            if httpx.get(url + "/ping", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


def smoke(relay_url: str) -> tuple[bool, str]:
    """One flush through the relay; BINARY client frames."""
    started = time.perf_counter()
    first_audio: float | None = None
    audio = 0
    controls: list[dict[str, object]] = []
    with connect(relay_url.replace("http://", "ws://") + "/invocations-bidirectional-stream",
                 max_size=None, open_timeout=10) as ws:
        for msg in ({"type": "session.config", "response_format": "pcm", "stream_audio": True,
                     "split_granularity": "sentence"},
                    {"type": "input.text", "text": "Hello from the relay. A second sentence."},
                    {"type": "input.done"}):
            ws.send(json.dumps(msg).encode())
        while not controls or controls[-1].get("type") not in ("session.done", "error"):
            frame = ws.recv(timeout=60)
            if isinstance(frame, str):
                controls.append(json.loads(frame))
            else:
                audio += len(frame)
                first_audio = first_audio or time.perf_counter()
    kinds = [c["type"] for c in controls]
    ok = kinds[-1] == "session.done" and kinds.count("audio.done") == 2 and audio > 0
    ttfa = f"{(first_audio - started) * 1000:.0f} ms" if first_audio else "none"
    return ok, f"smoke through the relay: {kinds}, {audio} audio bytes, first audio after {ttfa}"


def suite_takes_dialect() -> bool:
    out = subprocess.run([sys.executable, "-m", "pytest", "conformance", "--help"], capture_output=True,
                         text=True, timeout=120)
    return "--dialect" in out.stdout


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.app_py.is_file():
        print(f"voxtral_relay: no such file: {args.app_py}", file=sys.stderr)
        return exit_codes.USAGE
    env = relay_env(args.pythonpath)
    missing = subprocess.run([sys.executable, "-c", "import fastapi, httpx, websockets, uvicorn"], env=env,
                             capture_output=True, text=True).returncode
    if missing:
        print("voxtral_relay: the relay needs fastapi (with httpx, websockets, uvicorn); give --pythonpath "
              "a folder holding it", file=sys.stderr)
        return exit_codes.USAGE
    container = LocalContainer(args=args.container_args.split())
    relay: subprocess.Popen[bytes] | None = None
    try:
        if not container.wait_ready(READY_S, interval=0.2).ready:
            print("voxtral_relay: the reference container did not become ready", file=sys.stderr)
            return exit_codes.UNREACHABLE
        port = free_port()
        relay = subprocess.Popen([sys.executable, "-c", LAUNCH, str(args.app_py), container.url, str(port)],
                                 env=env)
        relay_url = f"http://127.0.0.1:{port}"
        if not wait_ping(relay_url, relay):
            print("voxtral_relay: the relay's /ping never answered 200", file=sys.stderr)
            return exit_codes.UNREACHABLE
        print(f"relay {relay_url} -> reference container {container.url}/v1/audio/speech/stream")
        ok, line = smoke(relay_url)
        print(line)
        # The relay takes vLLM-Omni's wire on SageMaker's own route (no invocation-path header).
        command = [sys.executable, "-m", "pytest", "conformance", "--container-url", relay_url,
                   "--dialect", "vllm-omni", "--ws-path", WS_PATH, "--conformance-report", str(args.report)]
        code = exit_codes.OK if ok else exit_codes.BROKEN
        if args.no_suite or not suite_takes_dialect():
            print("the suite through the relay (while this runs, e.g. with --hold 600):\n  "
                  + " ".join(command[2:]))
        else:
            suite = subprocess.run(command, timeout=1800).returncode
            code = code or suite
        if args.hold:
            time.sleep(args.hold)
        return code
    finally:
        if relay is not None:
            relay.terminate()
            relay.wait(timeout=10)
        container.stop(grace=5)


if __name__ == "__main__":
    sys.exit(main())
