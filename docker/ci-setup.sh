#!/usr/bin/env bash
# CI entry point (.ci/run calls `bash docker/ci-setup.sh`): make sure a Docker engine answers
# (install docker.io and start dockerd when needed; idempotent), then build the image.
# Arguments go to build-image.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/bidi-tts-dockerd.log}
log() { printf '[ci-setup %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if ! docker info >/dev/null 2>&1; then
    if ! command -v dockerd >/dev/null; then
        log "installing docker.io"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq docker.io >/dev/null
    fi
    if ! docker info >/dev/null 2>&1; then
        log "starting dockerd (log: $DOCKERD_LOG)"
        nohup dockerd >"$DOCKERD_LOG" 2>&1 &
        for _ in $(seq 1 60); do
            docker info >/dev/null 2>&1 && break
            sleep 1
        done
        docker info >/dev/null 2>&1 || { log "dockerd did not come up"; tail -20 "$DOCKERD_LOG" >&2; exit 1; }
    fi
fi
log "docker engine $(docker version -f '{{.Server.Version}}') answers"
exec bash "$here/build-image.sh" "$@"
