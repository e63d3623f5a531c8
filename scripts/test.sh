#!/usr/bin/env bash
# `npm test`: every test. Installs what is missing (scripts/setup.sh), builds
# once (scripts/build.sh), then runs the suites in order and stops at the
# first failing one.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

bash scripts/setup.sh --browser --etcd
bash scripts/build.sh

passed=0
suite() {
  local name=$1
  shift
  echo
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    echo "=== $name FAILED"
    echo "suites: $passed passed, 1 failed"
    exit 1
  fi
}

suite "rust: fmt and clippy" bash -c 'cargo fmt --all --check && cargo clippy --workspace --all-targets -- -D warnings && cargo clippy --workspace --all-targets --all-features -- -D warnings && cargo clippy -p edge-lease-wasm --target wasm32-unknown-unknown -- -D warnings && cargo clippy -p edge-lease-wasm --target wasm32-unknown-unknown --features etcd -- -D warnings && cargo clippy -p edge-lease-h2 --target wasm32-wasip1 -- -D warnings && cargo fmt --check --manifest-path tests/etcd-client/Cargo.toml && CARGO_TARGET_DIR=target cargo clippy --release --manifest-path tests/etcd-client/Cargo.toml -- -D warnings'
suite "rust: cargo test (native, debug: overflow checks on)" cargo test --workspace
suite "rust: cargo test --all-features (the etcd parts)" cargo test --workspace --all-features
suite "wasm: wasm-pack test --node" wasm-pack test --node --release crates/wasm
# Without WASM_BINDGEN_USE_BROWSER, suites not marked run_in_browser (crates/wasm/tests/wasm.rs
# runs in both) are skipped under --chrome.
suite "wasm: wasm-pack test --headless --chrome" env WASM_BINDGEN_USE_BROWSER=1 wasm-pack test --headless --chrome --release crates/wasm
suite "js: node:test (API, packaging, runtimes, browser)" \
  node --test --test-concurrency=1 $(find tests -name '*.test.mjs' | sort)

echo
echo "suites: $passed passed, 0 failed"
