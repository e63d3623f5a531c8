// edge-lease/worker: leases on Cloudflare's network. A Worker that routes
// `/v3/...` to the namespace "default" and `/n/<namespace>/v3/...` to that
// namespace, and the Durable Object class serving each namespace:
//
//   // src/index.mjs (wrangler.toml: main = "src/index.mjs", a LEASES binding)
//   export { default, LeaseNamespace } from "edge-lease/worker";
//
// See docs/worker.md.
import { fetchWorker } from "./router.mjs";

// Only entrypoints: workerd takes every export of a Worker's main module
// for one, and refuses to start on any other value (a string, say), so
// this module can be the main one. The router's names are at
// edge-lease-etcd/worker/router.
export { LeaseNamespace } from "./namespace.mjs";

export default { fetch: fetchWorker };
