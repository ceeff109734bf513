"""Build the toy images of tests/toys/image (on the local base image, no registry): one whose entrypoint is
a shell PID 1 that drops SIGTERM, one with the AWS sample's vllm entrypoint.sh shape (an EXIT-only trap:
bash exits at once and its server dies mid-session), one whose entrypoint execs a server that handles
SIGTERM and drains."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CONTEXT = Path(__file__).with_name("image")
BASE = "bidi-tts-base:bookworm-py312"
DROPS = ("bidi-tts-toy-stop:drops-sigterm", "entrypoint-drops-sigterm.sh")
EXIT_TRAP = ("bidi-tts-toy-stop:exit-trap", "entrypoint-exit-trap.sh")
EXECS = ("bidi-tts-toy-stop:exec", "entrypoint-exec.sh")


def missing() -> str | None:
    """Why the images cannot be built here (None: they can)."""
    try:
        subprocess.run(["docker", "image", "inspect", BASE], check=True, capture_output=True, timeout=30)
    except FileNotFoundError:
        return "no docker client"
    except subprocess.CalledProcessError as exc:
        if b"No such image" in exc.stderr:
            return f"no base image {BASE}: run bash docker/build-base.sh"
        return f"the Docker engine does not answer: {exc.stderr.decode(errors='replace').strip()[:200]}"
    except subprocess.TimeoutExpired:
        return "the Docker engine does not answer within 30 s"
    return None


def build(tag: str, entry: str) -> str:
    """Build the toy image `tag` with entrypoint `entry`; returns the tag."""
    subprocess.run(["docker", "build", "-q", "--build-arg", f"BASE={BASE}", "--build-arg", f"ENTRY={entry}",
                    "-t", tag, str(CONTEXT)], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "DOCKER_BUILDKIT": "0"})
    return tag
