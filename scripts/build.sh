#!/usr/bin/env bash
# Builds the release wasm once (wasm-pack, wasm-opt from npm's binaryen) and
# the CommonJS bundle. Skips the build when nothing it depends on changed.
# Usage: scripts/build.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

stamp=pkg/.build-stamp
inputs=$(find src js Cargo.toml Cargo.lock scripts/build.sh -type f -newer "$stamp" 2>/dev/null | head -1 || true)
if [ "${1:-}" != "--force" ] && [ -f "$stamp" ] && [ -f dist/node.cjs ] && [ -z "$inputs" ]; then
  echo "[build] up to date"
  exit 0
fi

echo "[build] wasm-pack (release, target web)"
wasm-pack build --release --target web --out-dir pkg --no-pack
rm -f pkg/.gitignore

echo "[build] dist/node.cjs (esbuild)"
esbuild js/cjs.mjs --bundle --platform=node --format=cjs --outfile=dist/node.cjs \
  --external:../pkg/edge_lease_bg.wasm --log-level=warning

raw=$(wc -c < pkg/edge_lease_bg.wasm)
gz=$(gzip -9 -c pkg/edge_lease_bg.wasm | wc -c)
echo "[build] pkg/edge_lease_bg.wasm: $raw bytes raw, $gz bytes gzip -9"
touch "$stamp"
