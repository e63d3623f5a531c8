// Node (ESM), Deno and Bun: load the wasm synchronously from disk, so
// `import { Lessor } from "edge-lease"` needs no init step.
import { readFileSync } from "node:fs";
import * as engine from "../pkg/edge_lease.js";
import { markReady } from "../binding.js";
import { setDefaultEngine } from "../lessor.js";

engine.initSync({ module: readFileSync(new URL("../pkg/edge_lease_bg.wasm", import.meta.url)) });
markReady(engine);
setDefaultEngine(engine);

export { Lessor, LeaseError, LeaseEvent, leaseId } from "../lessor.js";

/** Already initialized here; kept so code written for browsers runs unchanged. */
export async function init() {}
export default init;
