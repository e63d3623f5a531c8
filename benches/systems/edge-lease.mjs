// (a) edge-lease through its JS API, imported by package name (Node resolves a
// package's own name through its package.json "exports"). Until the package
// is built this import fails and the harness reports the system as skipped.

import { createRequire } from "node:module";
import { Lessor } from "edge-lease";

const { version } = createRequire(import.meta.url)("../../package.json");

export default {
  name: "edge-lease",
  version,
  create(clock) {
    // No revoke-rate limit: the peers have none, and step 4 measures the
    // cost of expiry, not the configured pace.
    const lessor = new Lessor({ now: () => clock.now, autoTick: false, revokeRate: 2 ** 32 - 1 });
    // The API has no count: live = granted - expired (every lease in this
    // workload expires through tick()).
    let live = 0;
    const system = {
      grant(ttl) {
        live++;
        return lessor.grant(ttl).id;
      },
      put: (key, value, id) => lessor.put(key, value, { lease: id }),
      renew: (id) => lessor.renew(id),
      get: (key) => lessor.get(key)?.value,
      tick() {
        const n = lessor.tick().length;
        live -= n;
        return n;
      },
      count: () => live,
      close: () => lessor.close(),
    };
    // Bytes/lease from wasm linear memory when the package reports it
    // (otherwise the harness falls back to the V8 heap delta). Expected:
    // the module's linear memory size in bytes (memory.buffer.byteLength),
    // module-wide. The harness takes its growth while filling instances in a
    // fresh process, before the warm-up (see measureMemory in workload.mjs).
    if (typeof lessor.memoryBytes === "function") system.memoryBytes = () => lessor.memoryBytes();
    return system;
  },
};
