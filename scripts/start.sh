#!/usr/bin/env bash
# `npm start`: installs what is missing, builds if needed, then runs
# edge-lease as a single-member etcd in the foreground (server/main.mjs, run
# as a program: its #! line sets how glibc gives memory back, see there):
# etcd's v3 API (gRPC and JSON) on http://127.0.0.1:2379, state in data/, the
# demo page at http://127.0.0.1:2379/. Arguments are etcd's flags, e.g.
# `npm start -- --listen-client-urls http://127.0.0.1:9000 --data-dir /tmp/d`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh && bash scripts/build.sh && exec ./server/main.mjs "$@"
