"""Run one of the AWS sample's four containers here, its protocol code unchanged, its model served locally.

The sample (aws-samples/sample-kokoro-tts-for-ai-agents) is NOT in this repository: fetch it yourself
and pass its folder. This script imports the container's own `serve.py` / `streaming_proxy.py` from
there, byte for byte, and serves its Starlette `app` with uvicorn on 127.0.0.1, as its `__main__` does
(`uvicorn.run(app, ...)`: the same signal handling). Only the model call is served by this project's
Kokoro-82M (bench/sample/standins/); `--describe` prints what is real and what stands in.

    python bench/sample/sample_containers.py --sample-dir DIR --container kokoro-cpu [--port 8080]
    python bench/sample/sample_containers.py --sample-dir DIR --container vllm --describe
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.sample.standins import describe, prepare  # noqa: E402
from bidi_tts.exit_codes import RUN_FAILED, USAGE, Parser  # noqa: E402


def container_file(sample_dir: Path, container: str) -> Path | None:
    """The container's protocol file, under the repository root, its containers/ folder or itself."""
    name = prepare.PROTOCOL_FILES[container]
    for base in (sample_dir / "packages" / "speech-infra" / "containers", sample_dir / "containers", sample_dir):
        if (base / container / name).is_file():
            return base / container / name
    return None


def import_container(path: Path, container: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"aws_sample_{container.replace('-', '_')}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sample-dir", type=Path, required=True, help="the fetched sample (repository root)")
    parser.add_argument("--container", choices=sorted(prepare.PROTOCOL_FILES), required=True)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--describe", action="store_true", help="print what is real and what stands in, then exit")
    args = parser.parse_args(argv)
    if args.describe:
        print(describe.text(args.container))
        return 0
    path = container_file(args.sample_dir, args.container)
    if path is None:
        print(f"sample_containers: no {args.container}/{prepare.PROTOCOL_FILES[args.container]} under "
              f"{args.sample_dir} (fetch aws-samples/sample-kokoro-tts-for-ai-agents there)", file=sys.stderr)
        return USAGE
    if not 0 < args.port < 65536:
        print(f"sample_containers: --port {args.port} is not a TCP port", file=sys.stderr)
        return USAGE
    if not port_is_free(args.port):
        print(f"sample_containers: 127.0.0.1:{args.port} is already in use", file=sys.stderr)
        return USAGE
    try:
        prepare.before_import(args.container, path)
        module = import_container(path, args.container)
        prepare.after_import(args.container, module)
    except prepare.StandInError as exc:
        print(f"sample_containers: {exc}", file=sys.stderr)
        return RUN_FAILED
    import uvicorn

    print(f"sample_containers: {args.container} ({path}) on http://127.0.0.1:{args.port}", flush=True)
    uvicorn.run(module.app, host="127.0.0.1", port=args.port, log_level=os.environ.get("LOG_LEVEL", "warning"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
