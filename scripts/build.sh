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

# size FILE: its size raw and gzip -9.
size() {
  echo "[build] $1: $(wc -c < "$1") bytes raw, $(gzip -9 -c "$1" | wc -c) bytes gzip -9"
}

# Two builds of crates/wasm: js/pkg/, the lean engine of the edge package
# (edge-lease: browsers, Workers, Node, Deno and Bun load it), and
# dist/engine/, the etcd server's, with the `etcd` feature (HashKV, etcd's
# snapshot file), which edge-lease-etcd's server and Durable Object service
# load.
if changed js/pkg/.build-stamp crates/core crates/wasm Cargo.toml Cargo.lock scripts/build.sh; then
  echo "[build] wasm-pack (profile wasm, target web, lean: no features) -> js/pkg/"
  wasm-pack build crates/wasm --profile wasm --target web --out-dir "$PWD/js/pkg" --no-pack
  rm -f js/pkg/.gitignore
  size js/pkg/edge_lease_bg.wasm
  echo "[build] wasm-pack (profile wasm, target web, --features etcd) -> dist/engine/"
  wasm-pack build crates/wasm --profile wasm --target web --out-dir "$PWD/dist/engine" --no-pack --features etcd
  rm -f dist/engine/.gitignore
  size dist/engine/edge_lease_bg.wasm
  touch js/pkg/.build-stamp
else
  echo "[build] wasm up to date"
fi

# The server's HTTP/2 module (Node only, so not in the edge package): plain cargo, no
# bindings; server/h2.mjs gives it its few WASI imports.
if changed dist/h2.wasm crates/h2 Cargo.lock scripts/build.sh; then
  echo "[build] dist/h2.wasm (crates/h2, wasm32-wasip1)"
  cargo build --release --target wasm32-wasip1 -p edge-lease-h2
  mkdir -p dist
  wasm-opt -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals target/wasm32-wasip1/release/edge_lease_h2.wasm -o dist/h2.wasm
  echo "[build] dist/h2.wasm: $(wc -c < dist/h2.wasm) bytes"
else
  echo "[build] dist/h2.wasm up to date"
fi

if changed js/dist/.build-stamp js scripts/build.sh scripts/bundle.mjs; then
  echo "[build] js/dist/node.cjs, js/dist/node.mjs (esbuild)"
  node scripts/bundle.mjs
  touch js/dist/.build-stamp
else
  echo "[build] js/dist/node.cjs, js/dist/node.mjs up to date"
fi
