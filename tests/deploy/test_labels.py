"""The label check: injectable inspectors, a real registry on loopback, and the local Docker engine."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from bidi_tts.protocol import BIDI_LABEL
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.imageref import parse_image
from reference_container_deploy.labels import Inspection, RegistryInspector, check_label, docker_inspector
from tests.deploy.conftest import free_port
from tests.deploy.registry import OCI_INDEX, REGISTRY_BINARY, local_registry, push_image, push_manifest

GOOD = {BIDI_LABEL: "true"}
needs_registry = pytest.mark.skipif(
    REGISTRY_BINARY is None, reason="no docker-registry binary (Debian package `docker-registry`) installed"
)


def fixed(labels: dict[str, str] | None, problem: str | None = None):
    return lambda image, uri: Inspection("fixed", labels=labels, problem=problem)


IMAGE = parse_image("127.0.0.1:5000/kokoro:v1")


def test_label_true_passes() -> None:
    assert check_label(IMAGE, "x", [fixed(GOOD)]).source == "fixed"
    assert check_label(IMAGE, "x", [fixed({BIDI_LABEL: "True"})]).labels is not None


@pytest.mark.parametrize("labels", [{}, {BIDI_LABEL: "false"}, {"other": "true"}])
def test_label_missing_or_false_is_refused(labels: dict[str, str]) -> None:
    with pytest.raises(DeployError) as err:
        check_label(IMAGE, "my-image:v1", [fixed(labels), fixed(GOOD)])
    assert err.value.code == ExitCode.LABEL
    assert "my-image:v1" in err.value.message and f"LABEL {BIDI_LABEL}=true" in (err.value.fix or "")


def test_first_inspector_that_sees_the_image_decides() -> None:
    found = check_label(IMAGE, "x", [fixed(None, "no engine"), fixed(GOOD)])
    assert found.labels == GOOD


def test_no_inspector_can_see_the_image() -> None:
    with pytest.raises(DeployError) as err:
        check_label(IMAGE, "x", [fixed(None, "no engine"), fixed(None, "registry unreachable")])
    assert err.value.code == ExitCode.LABEL
    assert "cannot inspect" in err.value.message
    assert "no engine" in err.value.message and "registry unreachable" in err.value.message
    assert "--skip-label-check" in (err.value.fix or "")


def test_registry_unreachable_is_a_problem_not_a_crash() -> None:
    image = parse_image(f"127.0.0.1:{free_port()}/kokoro:v1")
    found = RegistryInspector()(image, str(image))
    assert found.labels is None and found.problem == "the registry cannot be reached"


@needs_registry
def test_registry_inspector_reads_labels_from_a_real_registry(tmp_path: Path) -> None:
    with local_registry(tmp_path) as registry:
        push_image(registry, "kokoro", "good", {**GOOD, "org.opencontainers.image.title": "k"})
        push_image(registry, "kokoro", "plain", {"org.opencontainers.image.title": "k"})
        inspect = RegistryInspector()
        good = inspect(parse_image(f"{registry}/kokoro:good"), "")
        assert good.labels is not None and good.labels[BIDI_LABEL] == "true"
        assert (
            check_label(parse_image(f"{registry}/kokoro:good"), "", [inspect]).source
            == f"registry {registry}"
        )
        with pytest.raises(DeployError, match="is missing"):
            check_label(parse_image(f"{registry}/kokoro:plain"), "", [inspect])
        absent = inspect(parse_image(f"{registry}/kokoro:nope"), "")
        assert absent.labels is None and "does not have" in (absent.problem or "")


@needs_registry
def test_registry_inspector_picks_linux_amd64_from_an_index(tmp_path: Path) -> None:
    with local_registry(tmp_path) as registry:
        arm = push_image(registry, "multi", "arm", {}, arch="arm64")
        amd = push_image(registry, "multi", "amd", GOOD)
        index = {
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [
                {
                    "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                    "digest": digest,
                    "size": 1,
                    "platform": {"os": "linux", "architecture": arch},
                }
                for digest, arch in ((arm, "arm64"), (amd, "amd64"))
            ],
        }
        push_manifest(registry, "multi", "latest", index, OCI_INDEX)
        found = RegistryInspector()(parse_image(f"{registry}/multi:latest"), "")
        assert found.labels == GOOD


class _AuthRegistry(BaseHTTPRequestHandler):
    """Needs Basic auth (like ECR with its token); blobs redirect to storage that rejects extra auth."""

    expected = "Basic " + base64.b64encode(b"AWS:token-123").decode()
    config = json.dumps({"config": {"Labels": GOOD}}).encode()
    seen_storage_auth: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        if self.path.startswith("/storage/"):
            type(self).seen_storage_auth.append(self.headers.get("Authorization"))
            self._send(400 if self.headers.get("Authorization") else 200, self.config)
        elif self.headers.get("Authorization") != self.expected:
            self._send(401, b"{}")
        elif "/manifests/" in self.path:
            manifest = {"schemaVersion": 2, "config": {"digest": "sha256:" + "c" * 64}}
            self._send(
                200, json.dumps(manifest).encode(), "application/vnd.docker.distribution.manifest.v2+json"
            )
        elif "/blobs/" in self.path:
            self.send_response(307)
            self.send_header("Location", f"/storage/{self.path.rsplit('/', 1)[-1]}?X-Amz-Signature=abc")
            self.end_headers()
        else:
            self._send(404, b"{}")

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def auth_registry() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _AuthRegistry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_registry_inspector_uses_basic_auth_and_drops_it_on_redirect(auth_registry: str) -> None:
    _AuthRegistry.seen_storage_auth.clear()
    image = parse_image(f"{auth_registry}/kokoro:v1")
    found = RegistryInspector(lambda ref: ("AWS", "token-123"))(image, "")
    assert found.labels == GOOD
    assert _AuthRegistry.seen_storage_auth == [None]
    refused = RegistryInspector(lambda ref: ("AWS", "wrong"))(image, "")
    assert refused.labels is None and "refused access (HTTP 401)" in (refused.problem or "")


def test_docker_inspector_reports_why_it_cannot_look(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    found = docker_inspector(IMAGE, "127.0.0.1:5000/kokoro:v1")
    assert found.labels is None and found.problem == "the docker CLI is not installed"
