// edge-lease/worker: leases on Cloudflare's network. A Worker that routes
// `/v3/...` to the namespace "default" and `/n/<namespace>/v3/...` to that
// namespace, and the Durable Object class serving each namespace:
//
//   // src/index.mjs (wrangler.toml: main = "src/index.mjs", a LEASES binding)
//   export { default, LeaseNamespace } from "edge-lease/worker";
//
// See README.md ("Cloudflare: a lease service per namespace").
import { fetchWorker } from "./router.mjs";

export { LeaseNamespace } from "./namespace.mjs";
export { route, NAMESPACE, DEFAULT_NAMESPACE } from "./router.mjs";

export default { fetch: fetchWorker };
