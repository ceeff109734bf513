"""Check that an image carries the SageMaker bidirectional-streaming label before deploying it.

Inspection goes through small injectable functions (`LabelInspector`): the local Docker engine
(`docker image inspect`) and the registry's HTTP API v2 (manifest, then the config blob). The first
one that can see the image decides; when none can, the check refuses unless skipped.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bidi_tts.protocol import BIDI_LABEL
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.imageref import ImageRef

_HTTP_TIMEOUT_S = 20.0
_DOCKER_TIMEOUT_S = 30.0
_MANIFEST_TYPES = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)
_INDEX_TYPES = {
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
}


@dataclass(frozen=True, slots=True)
class Inspection:
    """What one inspector found: the image's labels, or why it could not look."""

    source: str
    labels: dict[str, str] | None = None
    problem: str | None = None


LabelInspector = Callable[[ImageRef, str], Inspection]
"""Given the parsed image and the URI as typed, return its labels or the reason it cannot see them."""

BasicAuth = tuple[str, str]


def docker_inspector(image: ImageRef, uri: str) -> Inspection:
    """Read the labels of a local image through the Docker CLI (`docker image inspect`)."""
    source = "local Docker engine"
    docker = shutil.which("docker")
    if docker is None:
        return Inspection(source, problem="the docker CLI is not installed")
    try:
        result = subprocess.run(
            [docker, "image", "inspect", "--format", "{{json .Config.Labels}}", uri],
            capture_output=True,
            text=True,
            timeout=_DOCKER_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Inspection(source, problem="docker image inspect did not answer in time")
    if result.returncode != 0:
        err = result.stderr.lower()
        if "no such image" in err or "no such object" in err:
            return Inspection(source, problem="the image is not present locally")
        if "cannot connect" in err or "daemon" in err:
            return Inspection(source, problem="no Docker engine answers")
        return Inspection(source, problem=f"docker image inspect failed (exit {result.returncode})")
    try:
        labels = json.loads(result.stdout or "null") or {}
    except json.JSONDecodeError:
        return Inspection(source, problem="docker image inspect printed something that is not JSON")
    return Inspection(source, labels={str(k): str(v) for k, v in labels.items()})


def _scheme(registry: str) -> str:
    host = registry.rsplit(":", 1)[0] if not registry.startswith("[") else registry.split("]")[0] + "]"
    # Docker itself talks plain HTTP to loopback registries; everything else is HTTPS.
    return "http" if host in {"localhost", "127.0.0.1", "[::1]"} else "https"


class RegistryInspector:
    """Read labels from a registry (HTTP API v2): manifest (index -> linux/amd64), then config blob.

    `auth` is a callable giving Basic credentials for the registry (ECR: the authorization token) or
    None for anonymous access; Bearer-token challenges (Docker Hub style) are answered anonymously.
    """

    def __init__(self, auth: Callable[[ImageRef], BasicAuth | None] | None = None) -> None:
        self._auth = auth
        self._bearer: str | None = None

    def __call__(self, image: ImageRef, uri: str) -> Inspection:
        source = f"registry {image.registry}"
        try:
            basic = self._auth(image) if self._auth else None
        except DeployError as exc:
            return Inspection(source, problem=f"no registry credentials ({exc.message})")
        base = f"{_scheme(image.registry)}://{image.registry}/v2/{image.repository}"
        try:
            manifest = self._get_json(f"{base}/manifests/{image.reference}", basic, _MANIFEST_TYPES)
            if manifest.get("mediaType") in _INDEX_TYPES or "manifests" in manifest:
                digest = _pick_platform(manifest.get("manifests", []))
                if digest is None:
                    return Inspection(source, problem="the image index has no linux/amd64 image")
                manifest = self._get_json(f"{base}/manifests/{digest}", basic, _MANIFEST_TYPES)
            config_digest = (manifest.get("config") or {}).get("digest")
            if not isinstance(config_digest, str):
                return Inspection(source, problem="the manifest names no config blob")
            config = self._get_json(f"{base}/blobs/{config_digest}", basic, "*/*")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return Inspection(source, problem="the registry does not have this image")
            if exc.code in (401, 403):
                return Inspection(source, problem=f"the registry refused access (HTTP {exc.code})")
            return Inspection(source, problem=f"the registry answered HTTP {exc.code}")
        except (urllib.error.URLError, TimeoutError, OSError):
            return Inspection(source, problem="the registry cannot be reached")
        except ValueError:
            return Inspection(source, problem="the registry answered something that is not JSON")
        labels = (config.get("config") or {}).get("Labels") or {}
        return Inspection(source, labels={str(k): str(v) for k, v in labels.items()})

    def _get_json(self, url: str, basic: BasicAuth | None, accept: str) -> dict:
        try:
            return self._fetch(url, basic, accept)
        except urllib.error.HTTPError as exc:
            challenge = exc.headers.get("WWW-Authenticate", "") if exc.headers else ""
            if exc.code != 401 or not challenge.lower().startswith("bearer ") or self._bearer:
                raise
            self._bearer = _anonymous_bearer(challenge)
            return self._fetch(url, basic, accept)

    def _fetch(self, url: str, basic: BasicAuth | None, accept: str) -> dict:
        request = urllib.request.Request(url, headers={"Accept": accept})
        # Unredirected: blob downloads redirect to presigned storage URLs that reject extra auth.
        if self._bearer:
            request.add_unredirected_header("Authorization", f"Bearer {self._bearer}")
        elif basic:
            request.add_unredirected_header("Authorization", _basic_header(basic))
        with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:
            body = json.loads(response.read())
        if not isinstance(body, dict):
            raise ValueError("not a JSON object")
        return body


def _basic_header(basic: BasicAuth) -> str:
    return "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()


def _anonymous_bearer(challenge: str) -> str:
    params = dict(
        part.strip().split("=", 1) for part in challenge[len("bearer ") :].split(",") if "=" in part
    )
    params = {k: v.strip('"') for k, v in params.items()}
    realm = params.pop("realm", "")
    if not realm.startswith("https://"):
        raise urllib.error.URLError("bearer realm is not HTTPS")
    url = realm + "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=_HTTP_TIMEOUT_S) as response:
        token = json.loads(response.read())
    return str(token.get("token") or token.get("access_token") or "")


def _pick_platform(manifests: list[dict]) -> str | None:
    for entry in manifests:
        platform = entry.get("platform") or {}
        if platform.get("os") == "linux" and platform.get("architecture") == "amd64":
            return entry.get("digest")
    return None


def check_label(image: ImageRef, uri: str, inspectors: Sequence[LabelInspector]) -> Inspection:
    """Return the inspection that found the label set to `true`, or raise a `DeployError`.

    Refuses when the first inspector able to see the image finds the label missing or not `true`,
    and when no inspector can see the image at all.
    """
    problems: list[str] = []
    for inspect in inspectors:
        found = inspect(image, uri)
        if found.labels is None:
            problems.append(f"{found.source}: {found.problem}")
            continue
        value = found.labels.get(BIDI_LABEL)
        if value is None or value.strip().lower() != "true":
            state = "is missing" if value is None else f"is {value!r}, not 'true'"
            raise DeployError(
                ExitCode.LABEL,
                f"image {uri} cannot serve bidirectional streaming: label {BIDI_LABEL} {state} "
                f"(checked via {found.source}).",
                f"add `LABEL {BIDI_LABEL}=true` to the Dockerfile and rebuild.",
            )
        return found
    raise DeployError(
        ExitCode.LABEL,
        f"cannot inspect image {uri} for label {BIDI_LABEL}: " + "; ".join(problems) + ".",
        "pull or build the image locally, or make the registry reachable; pass --skip-label-check "
        "only if you know the label is set.",
    )
