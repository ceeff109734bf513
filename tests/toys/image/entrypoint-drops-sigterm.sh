#!/bin/bash
# A shell PID 1 with no trap at all: the server in the background, `wait -n`. bash installs no SIGTERM
# handler, and the kernel drops a signal PID 1 has no handler for: SIGTERM never arrives anywhere.
set -eo pipefail
python3.12 /opt/toy/toy_server.py &
SERVER_PID=$!
wait -n "$SERVER_PID"
exit $?
