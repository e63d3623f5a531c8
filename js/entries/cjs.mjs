// Source of js/dist/node.cjs (bundled by esbuild): the same as node.mjs, but
// finding the wasm next to the bundle with __dirname, which CJS has.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as engine from "../pkg/edge_lease.js";
import { markReady } from "../binding.js";
import { setDefaultEngine } from "../lessor.js";

engine.initSync({ module: readFileSync(join(__dirname, "..", "pkg", "edge_lease_bg.wasm")) });
markReady(engine);
setDefaultEngine(engine);

export { Lessor, LeaseError, LeaseEvent, leaseId } from "../lessor.js";
export async function init() {}
