"""Run the conformance suite through the real SageMaker SDK and the local runtime stand-in.

    uv run python scripts/conformance_via_gateway.py [--container-url URL] [pytest args...]

Starts the reference container as a local process (unless --container-url names a running one),
puts the stand-in for the SageMaker runtime edge (bidi_tts.gateway, TLS + HTTP/2 event stream) in
front of it, and runs `pytest conformance --endpoint-name ... --endpoint-url ... --endpoint-ca ...`,
so every case travels as production traffic does: SDK -> edge -> container WebSocket. The stand-in
needs no real credentials; dummy ones are set when none are configured. Exits with pytest's code.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bidi_tts.gateway.config import GatewayConfig
from bidi_tts.gateway.server import GatewayThread
from bidi_tts_conformance.local_target import container_at

ENDPOINT_NAME = "reference-kokoro"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--container-url", help="front this running container instead of starting one")
    args, pytest_args = parser.parse_known_args()

    env = dict(os.environ)
    env.setdefault("AWS_ACCESS_KEY_ID", "stand-in")
    env.setdefault("AWS_SECRET_ACCESS_KEY", "stand-in")
    env.setdefault("AWS_REGION", "us-east-1")
    with (container_at(args.container_url, "gateway-conformance") as (upstream, _),
          tempfile.TemporaryDirectory(prefix="bidi-gateway-") as cert_dir):
        config = GatewayConfig(upstream=str(upstream), cert_dir=Path(cert_dir))
        with GatewayThread(config) as gateway:
            print(f"gateway-conformance: stand-in {gateway.url} -> {upstream} (CA {gateway.ca_file})", flush=True)
            cmd = [sys.executable, "-m", "pytest", "conformance", "--endpoint-name", ENDPOINT_NAME,
                   "--endpoint-url", gateway.url, "--endpoint-ca", gateway.ca_file, *pytest_args]
            return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
