#!/bin/bash
# A shell entrypoint done right: exec, so that the server is PID 1 and gets SIGTERM, which it handles.
set -eo pipefail
exec python3.12 /opt/toy/toy_server.py --handle-sigterm
