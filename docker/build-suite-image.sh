#!/usr/bin/env bash
# Build the conformance suite's image (default bidi-tts-conformance:latest) from docker/Dockerfile.suite,
# the local base image first when it is missing (build-base.sh).
#
# Env: IMAGE (tag), BASE_IMAGE (default bidi-tts-base:bookworm-py312), BUILD_CA_BUNDLE (CA bundle the
#      build stage trusts, for TLS-inspecting networks; default this host's). Extra arguments go to
#      `docker build`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
IMAGE=${IMAGE:-bidi-tts-conformance:latest}
BASE_IMAGE=${BASE_IMAGE:-bidi-tts-base:bookworm-py312}
BUILD_CA_BUNDLE=${BUILD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
log() { printf '[build-suite-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
start=$(date +%s)

# shellcheck source=docker/lib.sh
source "$here/lib.sh"
ensure_base_image "$BASE_IMAGE"
mkdir -p "$here/.stage/ca"
if [[ -s $BUILD_CA_BUNDLE ]]; then cp "$BUILD_CA_BUNDLE" "$here/.stage/ca/ca.pem"; fi
choose_builder
log "building $IMAGE (base=$BASE_IMAGE)"
docker build -f "$here/Dockerfile.suite" --build-arg BASE_IMAGE="$BASE_IMAGE" -t "$IMAGE" "$@" "$repo" 2>&1 \
    | grep --line-buffered -vE '^(DEPRECATED|  +BuildKit|  +environment-variable|$)' >&2
size=$(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.2f GB", $1/1e9}')
log "done: $IMAGE ($size) in $(( $(date +%s) - start )) s"
