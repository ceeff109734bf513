#!/usr/bin/env bash
# Build the reference container image (default bidi-tts-reference:latest): the local base image
# first when it is missing (build-base.sh), then reference_container/Dockerfile.
#
# Env: IMAGE (tag), BASE_IMAGE (default bidi-tts-base:bookworm-py312; any other value, e.g. a CUDA
#      base you built, is used as given and not built here), KOKORO_ROUTE (onnx | hub),
#      KOKORO_VOICES_SRC (voice packs to bake in; default ../shared/kokoro/voices next to the repo),
#      BUILD_CA_BUNDLE (CA bundle trusted by the build stages only, for TLS-inspecting networks;
#      default this host's /etc/ssl/certs/ca-certificates.crt; never copied into the final image).
# Extra arguments go to `docker build` (e.g. --no-cache).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
IMAGE=${IMAGE:-bidi-tts-reference:latest}
BASE_IMAGE=${BASE_IMAGE:-bidi-tts-base:bookworm-py312}
KOKORO_ROUTE=${KOKORO_ROUTE:-onnx}
KOKORO_VOICES_SRC=${KOKORO_VOICES_SRC:-$repo/../shared/kokoro/voices}
BUILD_CA_BUNDLE=${BUILD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

log() { printf '[build-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
start=$(date +%s)

# shellcheck source=docker/lib.sh
source "$here/lib.sh"
ensure_base_image "$BASE_IMAGE"

# Stage what the build copies but git must not hold: voice packs, config.json, the build CA bundle.
stage=$here/.stage
rm -rf "$stage" && mkdir -p "$stage/kokoro/voices" "$stage/ca"
if compgen -G "$KOKORO_VOICES_SRC/*.bin" >/dev/null || compgen -G "$KOKORO_VOICES_SRC/*.pt" >/dev/null; then
    cp -p "$KOKORO_VOICES_SRC"/*.{bin,pt} "$stage/kokoro/voices/" 2>/dev/null || true
    [[ -f $KOKORO_VOICES_SRC/../config.json ]] && cp -p "$KOKORO_VOICES_SRC/../config.json" "$stage/kokoro/"
    log "staged $(ls "$stage/kokoro/voices" | wc -l) voice packs from $KOKORO_VOICES_SRC"
else
    log "WARNING: no voice packs in $KOKORO_VOICES_SRC: the image will have only the hub's (KOKORO_ROUTE=hub) or the accented fallback voices"
fi
[[ -s $BUILD_CA_BUNDLE ]] && cp "$BUILD_CA_BUNDLE" "$stage/ca/ca.pem"

choose_builder
log "building $IMAGE (route=$KOKORO_ROUTE, base=$BASE_IMAGE)"
docker build -f "$repo/reference_container/Dockerfile" \
    --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg KOKORO_ROUTE="$KOKORO_ROUTE" \
    -t "$IMAGE" "$@" "$repo" 2>&1 | grep --line-buffered -vE '^(DEPRECATED|  +BuildKit|  +environment-variable|$)' >&2
size=$(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.2f GB", $1/1e9}')
log "done: $IMAGE ($size) in $(( $(date +%s) - start )) s"
