#!/usr/bin/env bash
# bidi-tts-conformance-gate: the conformance suite as a CI step against a container image.
#
#   bidi-tts-conformance-gate IMAGE [SUITE OPTIONS...]
#
# Starts IMAGE (`docker run -d -p 127.0.0.1:PORT:8080 IMAGE`), waits until GET /ping answers 200
# (bounded: SageMaker allows 8 minutes), runs the suite against it, keeps the reports (JSON, JUnit,
# HTML) and the container's log in REPORT_DIR, removes the container, and exits with the suite's
# code (0: every case passed, 1: a case failed, 4: bad usage, 69: the container is not reachable).
# The docs' GitHub Actions and GitLab CI examples call this; so does this project's own CI.
#
# Environment:
#   SUITE            command (default): `bidi-tts-conformance` on PATH (pip install 'WHEEL[conformance]')
#                    image: `docker run --network host SUITE_IMAGE` (the suite's own image)
#   SUITE_IMAGE      the suite's image for SUITE=image (default bidi-tts-conformance:latest)
#   PORT             host port the container's 8080 is published on (default 8080)
#   BIND_ADDRESS     host address it is published on (default 127.0.0.1; 0.0.0.0 with a remote engine)
#   CONTAINER_HOST   the address the suite reaches it at (default 127.0.0.1; "docker" for GitLab's dind)
#   REPORT_DIR       where the reports and the container log go (default reports/conformance)
#   READY_TIMEOUT    seconds to wait for GET /ping to answer 200 (default 480)
#   DOCKER_RUN_ARGS  more arguments for `docker run` of IMAGE (e.g. "--gpus all")
# Exit codes of its own: 2 bad usage, 3 the container did not become ready (its log is kept).
set -euo pipefail

SUITE=${SUITE:-command}
SUITE_IMAGE=${SUITE_IMAGE:-bidi-tts-conformance:latest}
PORT=${PORT:-8080}
BIND_ADDRESS=${BIND_ADDRESS:-127.0.0.1}
CONTAINER_HOST=${CONTAINER_HOST:-127.0.0.1}
REPORT_DIR=${REPORT_DIR:-reports/conformance}
READY_TIMEOUT=${READY_TIMEOUT:-480}
DOCKER_RUN_ARGS=${DOCKER_RUN_ARGS:-}

say() { printf '[conformance-gate %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
usage_error() { say "$* (usage: bidi-tts-conformance-gate IMAGE [SUITE OPTIONS...])"; exit 4; }  # docs/exit-codes.md

[[ $# -ge 1 && $1 != -* ]] || usage_error "give the container image to check as the first argument"
image=$1; shift
[[ $PORT =~ ^[0-9]+$ ]] || usage_error "PORT must be a port number, not '$PORT'"
[[ $SUITE == command || $SUITE == image ]] || usage_error "SUITE must be 'command' or 'image', not '$SUITE'"
command -v docker >/dev/null || usage_error "docker is not on PATH"
docker info >/dev/null 2>&1 || usage_error "no Docker engine answers (is dockerd running?)"
if [[ $SUITE == command ]]; then
    command -v bidi-tts-conformance >/dev/null \
        || usage_error "bidi-tts-conformance is not on PATH: pip install the project's wheel with [conformance], see docs/ci.md (or SUITE=image)"
fi
docker image inspect "$image" >/dev/null 2>&1 || usage_error "no image '$image' here: build or pull it first"

mkdir -p "$REPORT_DIR"
report_dir=$(cd "$REPORT_DIR" && pwd)
name="conformance-gate-$$"
url="http://$CONTAINER_HOST:$PORT"

keep_log_and_remove() {
    docker logs "$name" >"$report_dir/container.log" 2>&1 || true
    docker rm -f "$name" >/dev/null 2>&1 || true
}
trap keep_log_and_remove EXIT

say "starting $image as $name on $url"
# shellcheck disable=SC2086  # DOCKER_RUN_ARGS is a list of words on purpose
docker run -d --name "$name" -p "$BIND_ADDRESS:$PORT:8080" $DOCKER_RUN_ARGS "$image" >/dev/null \
    || { say "docker run failed (is port $PORT free?)"; exit 69; }

# The wait for /ping is written here again, not taken from bidi_tts.probe.wait_for_ping: with
# SUITE=image this host has docker and a python3 but not the project, and the wait also watches the
# container through `docker inspect`. It keeps probe's rules: 200 is ready, an exited container or
# READY_TIMEOUT ends the wait (exit 69), a note every 15 s.
ping_status() {
    python3 - "$url/ping" <<'EOF' 2>/dev/null || echo 000
import sys, urllib.error, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=2).status)
except urllib.error.HTTPError as e:
    print(e.code)
EOF
}

began=$SECONDS
next_note=$((began + 15))
while true; do
    status=$(ping_status)
    [[ $status == 200 ]] && break
    if [[ $(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null) != true ]]; then
        say "the container exited before GET /ping answered 200; its log: $report_dir/container.log"
        docker logs --tail 20 "$name" >&2 || true
        exit 69
    fi
    if (( SECONDS - began >= READY_TIMEOUT )); then
        say "GET /ping did not answer 200 within ${READY_TIMEOUT} s (last: $status); log: $report_dir/container.log"
        exit 69
    fi
    if (( SECONDS >= next_note )); then
        say "waiting for GET /ping: $status after $((SECONDS - began)) s"
        next_note=$((SECONDS + 15))
    fi
    sleep 1
done
say "ready after $((SECONDS - began)) s; running the suite (reports in $report_dir)"

reports=(--conformance-report "$report_dir/conformance.json" "--junitxml=$report_dir/junit.xml"
         --conformance-html "$report_dir/conformance.html")
rc=0
if [[ $SUITE == command ]]; then
    bidi-tts-conformance --container-url "$url" "${reports[@]}" "$@" || rc=$?
else
    # The suite's image writes its reports under /reports, a bind mount of REPORT_DIR.
    docker run --rm --network host -v "$report_dir:/reports" "$SUITE_IMAGE" --container-url "$url" \
        --conformance-report /reports/conformance.json --junitxml=/reports/junit.xml \
        --conformance-html /reports/conformance.html "$@" || rc=$?
fi
say "suite finished with exit code $rc; reports: $report_dir"
exit "$rc"
