// Cloudflare workerd (wrangler, Miniflare): the runtime compiles imported
// .wasm files to a WebAssembly.Module, and code generation from bytes is
// not allowed there, so instantiate the module synchronously.
import wasmModule from "../pkg/edge_lease_bg.wasm";
import * as engine from "../pkg/edge_lease.js";
import { markReady } from "../binding.js";
import { setDefaultEngine } from "../lessor.js";

engine.initSync({ module: wasmModule });
markReady(engine);
setDefaultEngine(engine);

export { Lessor, LeaseError, LeaseEvent, leaseId } from "../lessor.js";
export async function init() {}
export default init;
