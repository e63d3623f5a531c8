// Browsers and bundlers: the wasm is fetched next to this package, so the
// page must `await init()` once before `new Lessor()`. `init` is idempotent;
// it also accepts what wasm-bindgen's init does (a URL, Response, bytes or
// a WebAssembly.Module) for hosts that serve the file elsewhere.
import * as engine from "../pkg/edge_lease.js";
import { markReady } from "../binding.js";
import { setDefaultEngine } from "../lessor.js";

let started = null;

export function init(input) {
  if (started === null) {
    const arg = input === undefined ? undefined : { module_or_path: input };
    started = engine.default(arg).then(() => {
      markReady(engine);
      setDefaultEngine(engine);
    });
    started.catch(() => {
      started = null;
    });
  }
  return started;
}

export default init;
export { Lessor, LeaseError, LeaseEvent, leaseId } from "../lessor.js";
