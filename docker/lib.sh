# Sourced by build-image.sh and build-suite-image.sh (after they set `here` and define `log`).

# The base image: bidi-tts-base:* is built here when missing (build-base.sh); any other must exist.
ensure_base_image() {
    if [[ $1 == bidi-tts-base:* ]]; then
        BASE_IMAGE=$1 bash "$here/build-base.sh"
    elif ! docker image inspect "$1" >/dev/null 2>&1; then
        log "base image $1 is not present: build it first (see docker/README.md)"
        exit 2
    fi
}

# The classic builder unless buildx is installed (Debian's docker.io ships none).
choose_builder() {
    if ! docker buildx version >/dev/null 2>&1; then
        export DOCKER_BUILDKIT=0
    fi
}
