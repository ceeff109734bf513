#!/bin/bash
# The AWS sample's vllm entrypoint.sh, reduced to its process supervision: output through tee, a cleanup on
# EXIT only, the server in the background, `wait -n`. bash catches SIGTERM to run the EXIT trap (here,
# bash 5.2): PID 1 exits at once, and the server dies with it mid-session (no drain, no close frame).
set -eo pipefail
exec > >(tee -a /dev/fd/1) 2>&1
cleanup() { kill "$SERVER_PID" 2>/dev/null || true; }
trap cleanup EXIT
python3.12 /opt/toy/toy_server.py &
SERVER_PID=$!
wait -n "$SERVER_PID"
exit $?
