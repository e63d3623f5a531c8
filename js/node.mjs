// Node (ESM), Deno and Bun: load the wasm synchronously from disk, so
// `import { Lessor } from "edge-lease"` needs no init step.
import { readFileSync } from "node:fs";
import { initSync } from "../pkg/edge_lease.js";
import { markReady } from "./binding.js";

initSync({ module: readFileSync(new URL("../pkg/edge_lease_bg.wasm", import.meta.url)) });
markReady();

export { Lessor, LeaseError, LeaseEvent, leaseId } from "./lessor.js";

/** Already initialized here; kept so code written for browsers runs unchanged. */
export async function init() {}
export default init;
