#!/usr/bin/env bash
# Build the local base image for the reference container: a Debian bookworm rootfs made by
# debootstrap (no registry pull needed) plus CPython 3.12 copied from this machine's pyenv.
#
# Idempotent: skips when the image exists (use --force to rebuild); the debootstrap rootfs is
# cached outside git under $BIDI_TTS_CACHE_DIR (default /var/cache/bidi-tts).
#
# Env: BASE_IMAGE (tag to build, default bidi-tts-base:bookworm-py312), BIDI_TTS_CACHE_DIR,
#      PYTHON_PREFIX (a CPython 3.12 install built for glibc <= 2.36; default `pyenv prefix 3.12.1`),
#      DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BASE_IMAGE=${BASE_IMAGE:-bidi-tts-base:bookworm-py312}
CACHE_DIR=${BIDI_TTS_CACHE_DIR:-/var/cache/bidi-tts}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOTFS_IMAGE=bidi-tts-rootfs:bookworm
force=0
[[ ${1:-} == --force ]] && force=1

log() { printf '[build-base %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ $force == 0 ]] && docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    log "$BASE_IMAGE already present: skipping (use --force to rebuild)"
    exit 0
fi

if [[ -z ${PYTHON_PREFIX:-} ]]; then
    PYTHON_PREFIX=$(pyenv prefix 3.12.1 2>/dev/null || true)
fi
if [[ -z $PYTHON_PREFIX || ! -x $PYTHON_PREFIX/bin/python3.12 ]]; then
    log "no CPython 3.12 found: set PYTHON_PREFIX to a Python 3.12 install prefix (e.g. \$(pyenv prefix 3.12.1))"
    exit 2
fi
log "Python 3.12 from $PYTHON_PREFIX ($("$PYTHON_PREFIX/bin/python3.12" -VV | head -1))"

# The shared libraries CPython's extension modules link against (ldd of lib-dynload on the
# build machine), besides what minbase already has.
packages=ca-certificates,libssl3,libffi8,libsqlite3-0,libbz2-1.0,liblzma5,libncursesw6,libreadline8,
packages+=libuuid1,zlib1g,libexpat1,libnsl2,libtirpc3,libcrypt1,tzdata,netbase
rootfs=$CACHE_DIR/bookworm-rootfs
mkdir -p "$CACHE_DIR"
if [[ ! -f $rootfs/.bidi-tts-complete ]]; then
    command -v debootstrap >/dev/null || { log "installing debootstrap"; apt-get install -y -qq debootstrap >/dev/null \
        || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }; }
    log "debootstrap bookworm (minbase) into $rootfs: a few minutes"
    rm -rf "$rootfs"
    debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" "$DEBIAN_MIRROR" \
        > "$CACHE_DIR/debootstrap.log" 2>&1 \
        || { log "debootstrap failed: see $CACHE_DIR/debootstrap.log"; tail -20 "$CACHE_DIR/debootstrap.log" >&2; exit 1; }
    # No package caches or lists in the image; `apt-get update` brings the lists back.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
    touch "$rootfs/.bidi-tts-complete"
else
    log "reusing cached rootfs $rootfs"
fi

log "importing the rootfs as $ROOTFS_IMAGE"
tar --numeric-owner --exclude=./.bidi-tts-complete -C "$rootfs" -c . | docker import - "$ROOTFS_IMAGE" >/dev/null

# Stage the interpreter without what a server never needs (test suite, Tk, IDLE, static lib,
# scripts whose shebangs point at the build machine's prefix, third-party site-packages).
stage=$CACHE_DIR/python-stage
log "staging Python into $stage"
rm -rf "$stage" && mkdir -p "$stage/python"
tar -C "$PYTHON_PREFIX" -c \
    --exclude='./lib/python3.12/test' --exclude='./lib/python3.12/idlelib' \
    --exclude='./lib/python3.12/tkinter' --exclude='./lib/python3.12/turtledemo' \
    --exclude='./lib/python3.12/lib-dynload/_tkinter*' --exclude='./lib/python3.12/site-packages/*' \
    --exclude='*.a' --exclude='__pycache__' \
    --exclude='./bin/pip*' --exclude='./bin/idle*' --exclude='./bin/2to3*' --exclude='./bin/pydoc*' \
    --exclude='./bin/*-config' --exclude='./bin/*-gdb.py' --exclude='./bin/uv' --exclude='./bin/uvx' \
    . | tar -C "$stage/python" -x
cp "$here/Dockerfile.base" "$stage/Dockerfile"

log "building $BASE_IMAGE"
DOCKER_BUILDKIT=0 docker build -q --build-arg ROOTFS_IMAGE="$ROOTFS_IMAGE" -t "$BASE_IMAGE" "$stage" >/dev/null
log "done: $BASE_IMAGE ($(docker image inspect -f '{{.Size}}' "$BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
