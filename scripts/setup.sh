#!/usr/bin/env bash
# Installs what building and testing edge-lease need, skipping what is there.
# Usage: scripts/setup.sh [--browser] [--etcd]
#   --browser  also Debian's chromium + chromium-driver (browser tests)
#   --etcd     also Debian's etcd (behaviour comparison tests)
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
want_etcd=0
for a in "$@"; do
  case "$a" in
    --browser) want_browser=1 ;;
    --etcd) want_etcd=1 ;;
  esac
done

log() { printf '[setup] %s\n' "$*"; }
export PATH="$HOME/.cargo/bin:$PATH"

# Rust targets for wasm: the engine's, and the server's HTTP/2 module's
# (crates/h2 needs a clock, which wasm32-unknown-unknown lacks).
for target in wasm32-unknown-unknown wasm32-wasip1; do
  if ! rustup target list --installed | grep -qx "$target"; then
    log "adding rust target $target"
    rustup target add "$target"
  fi
done

# wasm-bindgen-cli must match the binding crate's pinned wasm-bindgen exactly.
want_wb=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)"/\1/p' crates/wasm/Cargo.toml)
have_wb=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have_wb" != "$want_wb" ]; then
  log "installing wasm-bindgen-cli $want_wb (have: ${have_wb:-none})"
  cargo install wasm-bindgen-cli --version "$want_wb" --force
fi

# wasm-pack from crates.io (its own downloads cannot work without GitHub).
if ! command -v wasm-pack >/dev/null 2>&1; then
  log "installing wasm-pack"
  cargo install wasm-pack --locked
fi

# npm packages (wasm-opt comes from binaryen here; never Debian's binaryen).
# (Two packages in one workspace: the root, edge-lease-etcd, and js/, edge-lease.)
if [ ! -d node_modules ] || [ package.json -nt node_modules/.package-lock.json ] || [ js/package.json -nt node_modules/.package-lock.json ] || [ ! -e node_modules/edge-lease ]; then
  log "installing npm packages"
  # `npm install`, not `npm ci`: npm 11 refuses this lockfile in `ci` for the
  # other platforms' optional packages of deno/bun/esbuild that it never
  # records; `install` follows the same locked versions.
  npm install --no-audit --no-fund
fi

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if [ "$want_browser" = 1 ] && { ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; }; then
  log "installing chromium and chromium-driver"
  apt_install chromium chromium-driver
fi

if [ "$want_etcd" = 1 ] && ! command -v etcd >/dev/null 2>&1; then
  log "installing etcd-server and etcd-client"
  apt_install etcd-server etcd-client
fi

# etcd's own Go client (clientv3 3.4.23) and Go, for the tests' Go programs
# (tests/etcd/go-client.mjs builds them offline, in GOPATH mode).
if [ "$want_etcd" = 1 ] && { ! command -v go >/dev/null 2>&1 || [ ! -d /usr/share/gocode/src/go.etcd.io/etcd/clientv3 ]; }; then
  log "installing golang-go and golang-etcd-server-dev"
  apt_install golang-go golang-etcd-server-dev
fi

# protoc, for the etcd-client crate's build (tests/etcd-client).
if [ "$want_etcd" = 1 ] && ! command -v protoc >/dev/null 2>&1; then
  log "installing protobuf-compiler"
  apt_install protobuf-compiler
fi

# etcd3gw, a Python client of etcd's JSON gateway (tests/etcd/etcd3gw.test.mjs),
# in a venv of its own, pinned.
etcd3gw_version=2.7.0
if [ "$want_etcd" = 1 ] && ! .cache/etcd3gw/bin/python -c "import etcd3gw, importlib.metadata as m; assert m.version('etcd3gw') == '$etcd3gw_version'" 2>/dev/null; then
  log "installing etcd3gw $etcd3gw_version (PyPI) in .cache/etcd3gw"
  rm -rf .cache/etcd3gw
  python3 -m venv .cache/etcd3gw
  .cache/etcd3gw/bin/pip install --quiet --disable-pip-version-check "etcd3gw==$etcd3gw_version"
fi
