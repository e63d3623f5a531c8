#!/usr/bin/env bash
# Builds the release wasm once (wasm-pack, wasm-opt from npm's binaryen) and
# the CommonJS bundle, each only when its own inputs changed.
# Usage: scripts/build.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

force=0
[ "${1:-}" = "--force" ] && force=1

# changed STAMP PATHS...: true if STAMP is missing or any file under PATHS is newer.
changed() {
  local stamp=$1
  shift
  [ "$force" = 1 ] || [ ! -f "$stamp" ] || [ -n "$(find "$@" -type f -newer "$stamp" 2>/dev/null | head -1)" ]
}

if changed pkg/.build-stamp src Cargo.toml Cargo.lock scripts/build.sh; then
  echo "[build] wasm-pack (release, target web)"
  wasm-pack build --release --target web --out-dir pkg --no-pack
  rm -f pkg/.gitignore
  touch pkg/.build-stamp
  raw=$(wc -c < pkg/edge_lease_bg.wasm)
  gz=$(gzip -9 -c pkg/edge_lease_bg.wasm | wc -c)
  echo "[build] pkg/edge_lease_bg.wasm: $raw bytes raw, $gz bytes gzip -9"
else
  echo "[build] wasm up to date"
fi

if changed dist/.build-stamp js pkg/edge_lease.js scripts/build.sh scripts/bundle.mjs; then
  echo "[build] dist/node.cjs, dist/node.mjs (esbuild)"
  node scripts/bundle.mjs
  touch dist/.build-stamp
else
  echo "[build] dist/node.cjs, dist/node.mjs up to date"
fi
