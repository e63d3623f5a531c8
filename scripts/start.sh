#!/usr/bin/env bash
# `npm start`: installs what is missing, builds if needed, then serves the
# demo page (www/) and the lease API (/v1/) on loopback. Arguments go to the
# server: --port N, --host H, --data-dir DIR, --no-persist.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh && bash scripts/build.sh && exec node scripts/serve.mjs "$@"
