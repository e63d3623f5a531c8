// For a host that brings its own build of the engine (edge-lease-etcd's
// server and Worker, whose build of crates/wasm adds etcd's HashKV and
// snapshot file): the Lessor class over that build, once its wasm is
// instantiated. The package's own entries (node.mjs, browser.mjs, ...) bind
// the lean build the same way.
import { markReady } from "../binding.js";
import { bindEngine } from "../lessor.js";

/** The Lessor class over `engine`, a wasm-bindgen module of crates/wasm whose wasm is instantiated. */
export function lessorOver(engine) {
  markReady(engine);
  return bindEngine(engine);
}

export { LeaseError, LeaseEvent, leaseId } from "../lessor.js";
