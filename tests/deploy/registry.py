"""Test helpers: run Debian's `docker-registry` (distribution 2.x) on loopback and push to it over HTTP."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.deploy.conftest import free_port

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
REGISTRY_BINARY = shutil.which("docker-registry") or shutil.which("registry")


@contextmanager
def local_registry(tmp: Path) -> Iterator[str]:
    """Start a registry on 127.0.0.1:FREE_PORT storing under `tmp`; yield its host:port."""
    assert REGISTRY_BINARY is not None
    port = free_port()
    tmp.mkdir(parents=True, exist_ok=True)
    config = tmp / "registry.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {tmp / 'data'}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )
    process = subprocess.Popen(
        [REGISTRY_BINARY, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("docker-registry did not start") from None
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _request(
    url: str, method: str, data: bytes | None = None, content_type: str | None = None
) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=data, method=method)
    if content_type:
        request.add_header("Content-Type", content_type)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers)


def push_blob(registry: str, repo: str, data: bytes) -> str:
    """Monolithic blob upload; returns the digest."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _, headers = _request(f"http://{registry}/v2/{repo}/blobs/uploads/", "POST", b"")
    location = headers["Location"]
    if location.startswith("/"):
        location = f"http://{registry}{location}"
    separator = "&" if "?" in location else "?"
    _request(f"{location}{separator}digest={digest}", "PUT", data, "application/octet-stream")
    return digest


def push_manifest(registry: str, repo: str, reference: str, manifest: dict, media_type: str) -> str:
    body = json.dumps(manifest).encode()
    _request(f"http://{registry}/v2/{repo}/manifests/{reference}", "PUT", body, media_type)
    return "sha256:" + hashlib.sha256(body).hexdigest()


def push_image(registry: str, repo: str, tag: str, labels: dict[str, str], arch: str = "amd64") -> str:
    """Push a one-layer image whose config carries `labels`; returns the manifest digest."""
    layer = push_blob(registry, repo, b"not really a tar, the registry does not look")
    config = json.dumps(
        {
            "architecture": arch,
            "os": "linux",
            "config": {"Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": [layer]},
        }
    ).encode()
    config_digest = push_blob(registry, repo, config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST,
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": len(config),
            "digest": config_digest,
        },
        "layers": [
            {"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 44, "digest": layer}
        ],
    }
    return push_manifest(registry, repo, tag, manifest, DOCKER_MANIFEST)
